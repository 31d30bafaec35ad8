package pvesim

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestVersionAndEnvelope(t *testing.T) {
	_, c := newSim(t, Options{})
	r := c.mustOK("GET", "/version", nil)
	v := r.obj(t)
	if v["version"] != "9.1.3" || v["release"] != "9.1" || v["repoid"] == "" {
		t.Fatalf("version = %v", v)
	}
	if !strings.HasPrefix(string(r.Body), `{"data":`) {
		t.Fatalf("body not in data envelope: %s", r.Body)
	}
}

func TestTransportErrors(t *testing.T) {
	srv, c := newSim(t, Options{})
	tests := []struct {
		name       string
		method     string
		path       string
		auth       string
		body       string
		wantStatus int
		wantReason string
	}{
		{"no credentials", "GET", "/version", "-", "", 401, "No ticket"},
		{"wrong secret", "GET", "/version", "PVEAPIToken=root@pam!proxmops=wrong", "", 401, "Authentication failed!"},
		{"wrong token id", "GET", "/version", "PVEAPIToken=root@pam!other=s3cret", "", 401, "Authentication failed!"},
		{"body on GET", "GET", "/version", "", "a=b", 501, "Unexpected content for method 'GET'"},
		{"body on DELETE", "DELETE", "/nodes/pve1/qemu/100", "", "purge=1", 501, "Unexpected content for method 'DELETE'"},
		{"unknown path", "GET", "/nodes/pve1/foo", "", "", 501, "Method 'GET /nodes/pve1/foo' not implemented"},
		{"unknown method", "PATCH", "/version", "", "", 501, "Method 'PATCH /version' not implemented"},
		{"unknown node", "GET", "/nodes/pve9/status", "", "", 500, "hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known"},
		{"missing guest", "GET", "/nodes/pve1/qemu/120/config", "", "", 500, "Configuration file 'nodes/pve1/qemu-server/120.conf' does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body *strings.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			var req *http.Request
			if body != nil {
				req, _ = http.NewRequest(tt.method, srv.APIURL()+tt.path, body)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			} else {
				req, _ = http.NewRequest(tt.method, srv.APIURL()+tt.path, nil)
			}
			switch tt.auth {
			case "":
				req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
			case "-":
			default:
				req.Header.Set("Authorization", tt.auth)
			}
			r := c.send(req)
			if r.Status != tt.wantStatus || r.Reason != tt.wantReason {
				t.Fatalf("got %d %q (%s), want %d %q", r.Status, r.Reason, r.Body, tt.wantStatus, tt.wantReason)
			}
			if tt.wantStatus == 500 && r.Message != tt.wantReason+"\n" {
				t.Fatalf("message %q", r.Message)
			}
		})
	}
}

func TestParameterVerification(t *testing.T) {
	_, c := newSim(t, Options{})
	long := strings.Repeat("x", 8193)
	wantParamErrors(t, c, "/nodes/pve1/qemu", []paramErrorCase{
		{"required", vals("cores", "2"), "vmid", "property is missing and it is not optional"},
		{"unknown parameter", vals("vmid", "100", "coers", "2"), "coers", "property is not defined in schema and the schema does not allow additional properties"},
		{"integer type", vals("vmid", "100", "cores", "two"), "cores", "type check ('integer') failed - got 'two'"},
		{"boolean words refused", vals("vmid", "100", "onboot", "true"), "onboot", "type check ('boolean') failed - got 'true'"},
		{"number type", vals("vmid", "100", "cpulimit", "1,5"), "cpulimit", "type check ('number') failed - got '1,5'"},
		{"enumeration", vals("vmid", "100", "ostype", "dos"), "ostype", "value 'dos' does not have a value in the enumeration 'other, wxp, w2k, w2k3, w2k8, wvista, win7, win8, win10, win11, l24, l26, solaris'"},
		{"minimum", vals("vmid", "100", "cores", "0"), "cores", "value must have a minimum value of 1"},
		{"maximum", vals("vmid", "100", "cpulimit", "200"), "cpulimit", "value must have a maximum value of 128"},
		{"max length", vals("vmid", "100", "description", long), "description", "value may only be 8192 characters long"},
		{"pattern", vals("vmid", "100", "vmgenid", "xyz"), "vmgenid", "value does not match the regex pattern"},
		{"named format", vals("vmid", "100", "name", "bad_name"), "name", "invalid format - value does not look like a valid DNS name\n"},
		{"vmid format", vals("vmid", "99"), "vmid", "invalid format - value does not look like a valid VM ID\n"},
		{"index out of range", vals("vmid", "100", "scsi31", "local-lvm:1"), "scsi31", "property is not defined in schema and the schema does not allow additional properties"},
		{"index with leading zero", vals("vmid", "100", "net01", "virtio"), "net01", "property is not defined in schema and the schema does not allow additional properties"},
		{"property string key range", vals("vmid", "100", "net0", "virtio,bridge=vmbr0,tag=5000"), "net0", "invalid format - format error\nnet0.tag: value must have a maximum value of 4094\n"},
		{"property string unknown key", vals("vmid", "100", "net0", "virtio,colour=red"), "net0", "invalid format - invalid key in comma-separated list property: colour\n"},
		{"property string missing required key", vals("vmid", "100", "net0", "bridge=vmbr0"), "net0", "invalid format - format error\nnet0.model: property is missing and it is not optional\n"},
		{"property string enum", vals("vmid", "100", "scsi0", "local-lvm:8,cache=fast"), "scsi0", "invalid format - format error\nscsi0.cache: value 'fast' does not have a value in the enumeration 'none, writethrough, writeback, unsafe, directsync'\n"},
		{"property string nested format", vals("vmid", "100", "ipconfig0", "ip=10.0.0.5/33"), "ipconfig0", "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration\n\n"},
		{"property string requires", vals("vmid", "100", "ipconfig0", "gw=10.0.0.1"), "ipconfig0", "invalid format - format error\nipconfig0.ip: missing property required by 'ipconfig0.gw'\n"},
		{"urlencoded", vals("vmid", "100", "sshkeys", "ssh-ed25519 AAAA"), "sshkeys", "invalid format - invalid urlencoded string: ssh-ed25519 AAAA\n"},
		{"requires", vals("vmid", "100", "force", "1"), "archive", "missing property required by 'force'"},
		{"tag list", vals("vmid", "100", "tags", "prod;we$b"), "tags", "invalid format - invalid characters in tag\n"},
		{"storage id", vals("vmid", "100", "storage", "x"), "storage", "invalid format - storage ID 'x' cannot be shorter than 2 characters\n"},
		{"duplicate uri parameter", vals("vmid", "100", "node", "pve2"), "node", "duplicate parameter (already defined in URI) with conflicting values!"},
	})
}

func TestJSONBodyAndQueryMerge(t *testing.T) {
	srv, c := newSim(t, Options{})
	req, _ := http.NewRequest("POST", srv.APIURL()+"/nodes/pve1/qemu?cores=2", strings.NewReader(`{"vmid":100,"onboot":true,"memory":"1024","name":"json-vm"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
	r := c.send(req)
	if r.Status != 200 {
		t.Fatalf("%d %s %s", r.Status, r.Reason, r.Body)
	}
	if st := c.waitTask(r.str(t)); st != "OK" {
		t.Fatalf("create: %s", st)
	}
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["cores"] != float64(2) || cfg["onboot"] != float64(1) || cfg["memory"] != "1024" || cfg["name"] != "json-vm" {
		t.Fatalf("config = %v", cfg)
	}
	// A JSON true is not an integer.
	req, _ = http.NewRequest("POST", srv.APIURL()+"/nodes/pve1/qemu", strings.NewReader(`{"vmid":101,"cores":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
	r = c.send(req)
	if r.Status != 400 || r.Errors["cores"] != "type check ('integer') failed - got JSON::PP::Boolean" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

func TestTicketAuth(t *testing.T) {
	_, c := newSim(t, Options{RootPassword: "hunter2"})
	c.header = http.Header{}
	if r := c.do("POST", "/access/ticket", vals("username", "root@pam", "password", "wrong")); r.Status != 401 || r.Reason != "authentication failure" {
		t.Fatalf("bad password: %d %q", r.Status, r.Reason)
	}
	r := c.mustOK("POST", "/access/ticket", vals("username", "root", "realm", "pam", "password", "hunter2"))
	tk := r.obj(t)
	ticket, csrf := tk["ticket"].(string), tk["CSRFPreventionToken"].(string)
	if !strings.HasPrefix(ticket, "PVE:root@pam:") || tk["username"] != "root@pam" {
		t.Fatalf("ticket %v", tk)
	}
	c.header.Set("Cookie", "PVEAuthCookie="+url.QueryEscape(ticket))
	c.mustOK("GET", "/nodes", nil)
	if r := c.do("POST", "/nodes/pve1/qemu", vals("vmid", "100")); r.Status != 401 || r.Reason != "Permission denied - invalid csrf token" {
		t.Fatalf("write without CSRF token: %d %q", r.Status, r.Reason)
	}
	c.header.Set("CSRFPreventionToken", csrf)
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100"))
	c.header.Set("Cookie", "PVEAuthCookie=PVE:root@pam:00000000::forged")
	if r := c.do("GET", "/nodes", nil); r.Status != 401 || r.Reason != "Authentication failed!" {
		t.Fatalf("forged ticket: %d %q", r.Status, r.Reason)
	}
}

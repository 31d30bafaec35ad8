package pve

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testToken = "root@pam!proxmops"

// taskDone returns a check that a call sent its task and the task ended
// well.
func taskDone(t *testing.T, c *Client) func(upid string, err error) {
	return func(upid string, err error) {
		t.Helper()
		if err == nil {
			_, err = c.WaitTask(context.Background(), upid, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newTestClient(t *testing.T, url string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{Endpoint: url + "/api2/json", TokenID: testToken, TokenSecret: "s3cret",
		RetryBackoff: time.Millisecond, TaskPollMin: time.Millisecond, TaskPollMax: 5 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func writeData(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no endpoint", Config{TokenID: testToken, TokenSecret: "x"}, "endpoint is empty"},
		{"bad scheme", Config{Endpoint: "ftp://x", TokenID: testToken, TokenSecret: "x"}, "invalid cluster endpoint"},
		{"no secret", Config{Endpoint: "https://x:8006", TokenID: testToken}, "tokenSecret"},
		{"bad token id", Config{Endpoint: "https://x:8006", TokenID: "root", TokenSecret: "x"}, "user@realm!tokenname"},
		{"bad fingerprint", Config{Endpoint: "https://x:8006", TokenID: testToken, TokenSecret: "x", Fingerprint: "zz"}, "invalid SHA-256 fingerprint"},
		{"missing ca file", Config{Endpoint: "https://x:8006", TokenID: testToken, TokenSecret: "x", CAFile: "/nonexistent/ca.pem"}, "caFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want error containing %q", err, tt.want)
			}
		})
	}
	c, err := New(Config{Endpoint: "https://pve:8006/", TokenID: testToken, TokenSecret: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint() != "https://pve:8006/api2/json" {
		t.Fatalf("endpoint %q", c.Endpoint())
	}
}

func TestRequestEncoding(t *testing.T) {
	type seen struct {
		method, rawPath, rawQuery, body, auth, ctype string
	}
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last = seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(b), r.Header.Get("Authorization"), r.Header.Get("Content-Type")}
		writeData(w, "UPID:pve1:00001234:00005678:65000000:qmdestroy:100:root@pam!proxmops:")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	ctx := context.Background()

	keys := EncodeSSHKeys([]string{"ssh-ed25519 AAAAC3Nz a@b", "ssh-rsa BBBB c+d@e"})
	if keys != "ssh-ed25519%20AAAAC3Nz%20a%40b%0Assh-rsa%20BBBB%20c%2Bd%40e" {
		t.Fatalf("sshkeys encoded as %q", keys)
	}
	p := NewParams().Set("sshkeys", keys).SetBool("onboot", true).SetBool("agent", false).Set("description", "a b+c")
	if err := c.QemuSetConfig(ctx, "pve1", 120, p); err != nil {
		t.Fatal(err)
	}
	if last.method != "PUT" || last.rawPath != "/api2/json/nodes/pve1/qemu/120/config" {
		t.Fatalf("request %+v", last)
	}
	wantBody := "sshkeys=ssh-ed25519%2520AAAAC3Nz%2520a%2540b%250Assh-rsa%2520BBBB%2520c%252Bd%2540e&onboot=1&agent=0&description=a%20b%2Bc"
	if last.body != wantBody {
		t.Fatalf("body\n got %s\nwant %s", last.body, wantBody)
	}
	if last.auth != "PVEAPIToken=root@pam!proxmops=s3cret" || last.ctype != "application/x-www-form-urlencoded" {
		t.Fatalf("headers %+v", last)
	}

	if _, err := c.DeleteVolume(ctx, "pve 1", "local", "local:iso/debian 12.iso"); err != nil {
		t.Fatal(err)
	}
	if last.method != "DELETE" || last.body != "" || last.rawPath != "/api2/json/nodes/pve%201/storage/local/content/local:iso%2Fdebian%2012.iso" {
		t.Fatalf("delete volume request %+v", last)
	}
	if _, err := c.QemuDelete(ctx, "pve1", 100); err != nil {
		t.Fatal(err)
	}
	if last.body != "" || last.rawQuery != "purge=1&destroy-unreferenced-disks=1" {
		t.Fatalf("qemu delete must carry parameters in the query: %+v", last)
	}
	if got := DecodeSSHKeys(keys); len(got) != 2 || got[1] != "ssh-rsa BBBB c+d@e" {
		t.Fatalf("decoded %q", got)
	}
}

func TestErrorTyping(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api2/json/version":
			w.WriteHeader(401)
		case "/api2/json/nodes/pve1/qemu/100/config":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(403)
			_, _ = io.WriteString(w, `{"data":null}`)
		case "/api2/json/nodes/pve1/qemu":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"data":null,"errors":{"cores":"type check ('integer') failed - got 'x'"}}`)
		case "/api2/json/nodes/pve1/qemu/120/status/current":
			w.WriteHeader(500)
		case "/api2/json/nodes/pve1/foo":
			w.WriteHeader(501)
		}
	}))
	defer srv.Close()
	// Reason phrases are what Proxmox uses for error text; httptest cannot set
	// them, so a proxy-less raw server below covers them. Here: the status codes.
	c := newTestClient(t, srv.URL, func(c *Config) { c.GetRetries = -1 })
	ctx := context.Background()
	var ae *AuthError
	if _, err := c.Version(ctx); !errors.As(err, &ae) || !strings.Contains(err.Error(), testToken) {
		t.Fatalf("401: %v", err)
	}
	var pe *PermissionError
	if _, err := c.QemuConfig(ctx, "pve1", 100, false); !errors.As(err, &pe) {
		t.Fatalf("403: %v", err)
	}
	var param *ParamError
	if _, err := c.QemuCreate(ctx, "pve1", 100, NewParams().Set("cores", "x")); !errors.As(err, &param) || param.Params["cores"] == "" {
		t.Fatalf("400: %v", err)
	} else if !strings.Contains(err.Error(), "cores: type check") {
		t.Fatalf("400 message: %v", err)
	}
	var api *APIError
	if err := c.Get(ctx, "nodes/pve1/foo", nil, nil); !errors.As(err, &api) || api.StatusCode != 501 {
		t.Fatalf("501: %v", err)
	}
}

// rawServer answers each request with a fixed raw HTTP response, so tests can
// use Proxmox's reason phrases.
func rawServer(t *testing.T, answer func(reqLine string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 64<<10)
				n, _ := conn.Read(buf)
				line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
				resp := answer(line)
				if resp == "" {
					return // drop the connection without an answer
				}
				_, _ = io.WriteString(conn, resp)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func answer(status string, body string) string {
	return fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, len(body), body)
}

func TestReasonPhraseErrors(t *testing.T) {
	url := rawServer(t, func(line string) string {
		switch {
		case strings.Contains(line, "/qemu/100/config"):
			return answer("403 Permission check failed (/vms/100, VM.Config.CPU)", `{"data":null}`)
		case strings.Contains(line, "/qemu/120/status/current"):
			return answer("500 Configuration file 'nodes/pve1/qemu-server/120.conf' does not exist", `{"data":null}`)
		case strings.Contains(line, "/qemu/121/status/start"):
			return answer("500 can't lock file '/var/lock/qemu-server/lock-121.conf' - got timeout", `{"data":null}`)
		}
		return answer("501 Method not implemented", `{"data":null}`)
	})
	c := newTestClient(t, url, nil)
	ctx := context.Background()
	var pe *PermissionError
	_, err := c.QemuConfig(ctx, "pve1", 100, false)
	if !errors.As(err, &pe) || pe.Path != "/vms/100" || pe.Privilege != "VM.Config.CPU" {
		t.Fatalf("403 parsing: %#v", err)
	}
	if !strings.Contains(err.Error(), "lacks privilege VM.Config.CPU on /vms/100") {
		t.Fatalf("403 message: %v", err)
	}
	_, err = c.QemuStatus(ctx, "pve1", 120)
	if !IsNotFound(err) {
		t.Fatalf("not found: %v", err)
	}
	_, err = c.QemuStart(ctx, "pve1", 121)
	if !IsLockTimeout(err) || IsNotFound(err) {
		t.Fatalf("lock timeout: %v", err)
	}
	if st := c.Stats(); st.Get != 2 || st.Post != 1 {
		t.Fatalf("a definite 500 answer must not be retried: %+v", st)
	}
}

func TestGetRetriedWritesNot(t *testing.T) {
	var gets, posts atomic.Int32
	url := rawServer(t, func(line string) string {
		if strings.HasPrefix(line, "GET") {
			if gets.Add(1) < 3 {
				return answer("500 Internal Server Error", `{"data":null}`)
			}
			return answer("200 OK", `{"data":{"version":"9.1.3"}}`)
		}
		posts.Add(1)
		return "" // the create reached the server, the answer never comes back
	})
	c := newTestClient(t, url, nil)
	ctx := context.Background()
	v, err := c.Version(ctx)
	if err != nil || v.Version != "9.1.3" || gets.Load() != 3 {
		t.Fatalf("GET retry: %v %+v after %d tries", err, v, gets.Load())
	}
	_, err = c.QemuCreate(ctx, "pve1", 100, NewParams().SetInt("cores", 2))
	var uo *UnknownOutcomeError
	if !errors.As(err, &uo) || !IsTransient(err) {
		t.Fatalf("want unknown outcome, got %v", err)
	}
	if posts.Load() != 1 {
		t.Fatalf("a create was sent %d times", posts.Load())
	}
	if st := c.Stats(); st.Get != 3 || st.Post != 1 || st.Total() != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, "http://"+addr, func(c *Config) { c.GetRetries = 1 })
	_, err = c.Version(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("got %v", err)
	}
	if c.Stats().Get != 2 {
		t.Fatalf("a refused GET is retried: %+v", c.Stats())
	}
	// A refused connection never carried the write: it is not "unknown".
	_, err = c.QemuStart(context.Background(), "pve1", 100)
	if !errors.As(err, &ue) || IsUnknownOutcome(err) {
		t.Fatalf("refused write: %v", err)
	}
}

func TestTLSVerification(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeData(w, map[string]any{"version": "9.1.3"})
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point here
	srv.StartTLS()
	defer srv.Close()
	actual := Fingerprint(srv.Certificate().Raw)
	other := strings.Repeat("AB:", 31) + "AB"
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"verified by default", func(*Config) {}, "fingerprint is " + actual},
		{"pinned", func(c *Config) { c.Fingerprint = actual }, ""},
		{"pinned lower case without colons", func(c *Config) {
			c.Fingerprint = strings.ToLower(strings.ReplaceAll(actual, ":", ""))
		}, ""},
		{"pin mismatch", func(c *Config) { c.Fingerprint = other }, "expected " + other + ", server presented " + actual},
		{"ca file", func(c *Config) { c.CAFile = caFile }, ""},
		{"insecure", func(c *Config) { c.InsecureSkipVerify = true }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, srv.URL, func(c *Config) { c.GetRetries = -1; tt.mod(c) })
			_, err := c.Version(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *CertificateError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want certificate error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWaitTask(t *testing.T) {
	const upidOK = "UPID:pve1:00000001:00000002:65000000:qmstart:100:root@pam!proxmops:"
	const upidWarn = "UPID:pve1:00000001:00000002:65000001:qmclone:100:root@pam!proxmops:"
	const upidFail = "UPID:pve1:00000001:00000002:65000002:qmcreate:100:root@pam!proxmops:"
	const upidHang = "UPID:pve1:00000001:00000002:65000003:qmstop:100:root@pam!proxmops:"
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case strings.Contains(path, "65000000") && strings.HasSuffix(path, "/status"):
			if polls.Add(1) < 3 {
				writeData(w, map[string]any{"status": "running", "type": "qmstart"})
				return
			}
			writeData(w, map[string]any{"status": "stopped", "exitstatus": "OK"})
		case strings.Contains(path, "65000001"):
			writeData(w, map[string]any{"status": "stopped", "exitstatus": "WARNINGS: 2"})
		case strings.Contains(path, "65000002") && strings.HasSuffix(path, "/status"):
			writeData(w, map[string]any{"status": "stopped", "exitstatus": "unable to create VM 100: config file already exists"})
		case strings.Contains(path, "65000002") && strings.HasSuffix(path, "/log"):
			writeData(w, []map[string]any{{"n": 1, "t": "starting"}, {"n": 2, "t": "TASK ERROR: unable to create VM 100: config file already exists"}})
		default:
			writeData(w, map[string]any{"status": "running"})
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	ctx := context.Background()
	var observed int
	st, err := c.WaitTask(ctx, upidOK, func(TaskStatus) { observed++ })
	if err != nil || !st.Succeeded() || observed != 3 {
		t.Fatalf("ok task: %v %+v observed %d", err, st, observed)
	}
	if _, err := c.WaitTask(ctx, upidWarn, nil); err != nil {
		t.Fatalf("WARNINGS is success: %v", err)
	}
	_, err = c.WaitTask(ctx, upidFail, nil)
	var te *TaskError
	if !errors.As(err, &te) || te.ExitStatus != "unable to create VM 100: config file already exists" || len(te.Log) != 2 {
		t.Fatalf("failed task: %#v", err)
	}
	if !strings.Contains(err.Error(), "qmcreate failed: unable to create VM 100") {
		t.Fatalf("message: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c.WaitTask(cctx, upidHang, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if _, err := c.WaitTask(ctx, "not-a-upid", nil); err == nil {
		t.Fatal("malformed UPID accepted")
	}
}

func TestConfigDecoding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"cores":2,"memory":"2048","onboot":1,"agent":"1","balloon":0,"cpuunits":1.5e3,"net0":"virtio=BC:24:11:00:00:01,bridge=vmbr0","digest":"abc","template":null}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	cfg, err := c.QemuConfig(context.Background(), "pve1", 120, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cores": "2", "memory": "2048", "onboot": "1", "agent": "1", "balloon": "0", "cpuunits": "1500"}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
	if _, ok := cfg["template"]; ok {
		t.Error("null value kept")
	}
	net0 := ParsePropertyString(cfg["net0"], "")
	if net0.Values["virtio"] != "BC:24:11:00:00:01" || net0.Values["bridge"] != "vmbr0" {
		t.Errorf("net0 parsed as %+v", net0)
	}
}

func TestUploadMultipart(t *testing.T) {
	var gotContent, gotName, gotData string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		gotContent = r.FormValue("content")
		f, hdr, err := r.FormFile("filename")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		b, _ := io.ReadAll(f)
		gotName, gotData = hdr.Filename, string(b)
		writeData(w, "UPID:pve1:00000001:00000002:65000000:imgcopy::root@pam!proxmops:")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	upid, err := c.Upload(context.Background(), "pve1", "local", "iso", "cidata-app.iso", strings.NewReader("ISO DATA"))
	if err != nil || !strings.Contains(upid, "imgcopy") {
		t.Fatalf("%v %q", err, upid)
	}
	if gotContent != "iso" || gotName != "cidata-app.iso" || gotData != "ISO DATA" {
		t.Fatalf("server saw %q %q %q", gotContent, gotName, gotData)
	}
}

func TestParseUPID(t *testing.T) {
	u, err := ParseUPID("UPID:pve1:0000A1B2:00C3D4E5:65F00000:download:debian.iso:root@pam!proxmops:")
	if err != nil || u.Node != "pve1" || u.Type != "download" || u.ID != "debian.iso" || u.User != "root@pam!proxmops" {
		t.Fatalf("%+v %v", u, err)
	}
}

func TestPropertyStringRoundTrip(t *testing.T) {
	p := ParsePropertyString("local-lvm:vm-120-disk-0,size=20G,discard=on", "file")
	if p.Values["file"] != "local-lvm:vm-120-disk-0" || p.Values["size"] != "20G" {
		t.Fatalf("%+v", p)
	}
	p.Set("ssd", "1")
	p.Del("discard")
	if s := p.String("file"); s != "local-lvm:vm-120-disk-0,size=20G,ssd=1" {
		t.Fatalf("rendered %q", s)
	}
}

// The client knows its own address and the node's from the connection
// its requests used (what a firewall rule must let in).
func TestConnAddrsAreTheConnectionsOwn(t *testing.T) {
	var peer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer = r.RemoteAddr
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"version":"8.4"}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	if l, r := c.ConnAddrs(); l != "" || r != "" {
		t.Fatalf("before any request: %q %q", l, r)
	}
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	local, remote := c.ConnAddrs()
	if !strings.HasPrefix(peer, local+":") || !strings.HasPrefix(strings.TrimPrefix(srv.URL, "http://"), remote+":") {
		t.Fatalf("local %q remote %q; the server saw %s at %s", local, remote, peer, srv.URL)
	}
}

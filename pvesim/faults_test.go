package pvesim

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec    string
		want    Faults
		wantErr string
	}{
		{"", Faults{}, ""},
		{"error-rate=0.1,drop-rate=0.05,latency=20ms,task-fail-rate=0.1,lock-timeout-rate=0.05,offline=pve2",
			Faults{FaultRates: FaultRates{ErrorRate: 0.1, DropRate: 0.05, Latency: 20 * time.Millisecond}, TaskFailRate: 0.1, LockTimeoutRate: 0.05, OfflineNodes: []string{"pve2"}}, ""},
		{"write.drop-rate=0.5,read.latency=5ms,offline=pve2;pve3",
			Faults{Classes: map[string]FaultRates{"write": {DropRate: 0.5}, "read": {Latency: 5 * time.Millisecond}}, OfflineNodes: []string{"pve2", "pve3"}}, ""},
		{"error-rate=1.5", Faults{}, "rate must be a number from 0 to 1"},
		{"latency=fast", Faults{}, "latency must be a duration"},
		{"explode=1", Faults{}, "unknown key"},
		{"error-rate", Faults{}, "want key=value"},
		{"nosuch.error-rate=0.1", Faults{}, "unknown class"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseFaults(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v", got, err)
			}
			if again, err := ParseFaults(got.String()); err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip %q: %+v %v", got.String(), again, err)
			}
		})
	}
}

func TestDroppedPostIsProcessed(t *testing.T) {
	srv, c := newSim(t, Options{})
	srv.InjectOnce(OneShot{Kind: FaultDrop, Method: "POST", Path: "/nodes/{node}/qemu"})
	req, _ := http.NewRequest("POST", srv.APIURL()+"/nodes/pve1/qemu", strings.NewReader("vmid=100"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
	resp, err := c.hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("dropped request answered %s", resp.Status)
	}
	if _, ok := srv.Guest(100); !ok {
		t.Fatal("the dropped create was not processed")
	}
	// Only once: the next POST is answered (and refused, since 100 exists).
	if r := c.do("POST", "/nodes/pve1/qemu", vals("vmid", "100")); r.Status != 500 {
		t.Fatalf("second POST: %d %s", r.Status, r.Body)
	}
}

func TestInjectedFaults(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a"}})

	srv.InjectOnce(OneShot{Kind: FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/100/config", Message: "cfs-lock 'file-user_cfg' error: got lock request timeout"})
	if r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")); r.Status != 500 || r.Reason != "cfs-lock 'file-user_cfg' error: got lock request timeout" {
		t.Fatalf("one-shot error: %d %q", r.Status, r.Reason)
	}
	if g, _ := srv.Guest(100); g.Config["cores"] != "" {
		t.Fatal("a request answered with an injected error was processed")
	}
	srv.InjectOnce(OneShot{Kind: FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/100/config", ParamErrors: map[string]string{"cores": "value must have a minimum value of 1"}})
	if r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")); r.Status != 400 || r.Reason != "Parameter verification failed." || r.Errors["cores"] != "value must have a minimum value of 1" {
		t.Fatalf("one-shot parameter refusal: %d %q %v", r.Status, r.Reason, r.Errors)
	}

	srv.SetFaults(Faults{OfflineNodes: []string{"pve2"}})
	if r := c.do("GET", "/nodes/pve2/status", nil); r.Status != 595 || r.Reason != "No route to host" {
		t.Fatalf("offline node: %d %q", r.Status, r.Reason)
	}
	nodes := c.mustOK("GET", "/nodes", nil).list(t)
	if nodes[1]["node"] != "pve2" || nodes[1]["status"] != "offline" || nodes[0]["status"] != "online" {
		t.Fatalf("nodes %v", nodes)
	}
	srv.SetNodeOnline("pve2", true)
	c.mustOK("GET", "/nodes/pve2/status", nil)

	srv.SetFaults(Faults{TaskFailRate: 1})
	if st := c.task("POST", "/nodes/pve1/qemu/100/status/start", nil); st != "simulated task failure (fault injection)" {
		t.Fatalf("task failure: %q", st)
	}
	srv.SetFaults(Faults{LockTimeoutRate: 1})
	if r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")); r.Status != 500 || r.Reason != "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout" {
		t.Fatalf("lock timeout: %d %q", r.Status, r.Reason)
	}
	srv.SetFaults(Faults{Classes: map[string]FaultRates{"write": {ErrorRate: 1}}})
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	if r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")); r.Status != 500 || r.Reason != "injected error" {
		t.Fatalf("write class error: %d %q", r.Status, r.Reason)
	}
}

func TestFaultsAreReproducible(t *testing.T) {
	pattern := func() string {
		f, _ := ParseFaults("error-rate=0.5")
		_, c := newSim(t, Options{Seed: 42, Faults: f})
		var b strings.Builder
		for i := 0; i < 40; i++ {
			if c.do("GET", "/version", nil).Status == 200 {
				b.WriteByte('.')
			} else {
				b.WriteByte('x')
			}
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("patterns differ or are degenerate: %s / %s", a, b)
	}
}

// TestInjectedTaskFailureRunsTheErrorPath fails every task of a create and
// a clone, QEMU and LXC: each worker's own error path runs, so no guest is
// left locked and no volume is left behind (qemu-server create_vm and
// clone_vm, pve-container create_vm and clone_vm remove what they made).
func TestInjectedTaskFailureRunsTheErrorPath(t *testing.T) {
	srv, c := lxcSim(t, Options{Seed: 1})
	mustAddGuest(t, srv, GuestSpec{VMID: 900, Node: "pve1", Config: map[string]string{
		"name": "tpl", "template": "1", "scsi0": "local-lvm:base-900-disk-0,size=4G"}})
	createCT(t, c, "901")
	before := map[string]string{
		"local-lvm": strings.Join(srv.Volumes("pve1", "local-lvm"), " "),
	}
	srv.SetFaults(Faults{TaskFailRate: 1})
	for _, tc := range []struct {
		name, method, path string
		params             url.Values
		vmid               int
		exit               string
	}{
		{"qemu create", "POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:4", "efidisk0", "local-lvm:1"),
			100, "unable to create VM 100 - simulated task failure (fault injection)"},
		{"qemu full clone", "POST", "/nodes/pve1/qemu/900/clone", vals("newid", "101", "full", "1"),
			101, "clone failed: simulated task failure (fault injection)"},
		{"qemu linked clone", "POST", "/nodes/pve1/qemu/900/clone", vals("newid", "102"),
			102, "clone failed: simulated task failure (fault injection)"},
		{"lxc create", "POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:8"),
			200, "unable to create CT 200 - simulated task failure (fault injection)"},
		{"lxc clone", "POST", "/nodes/pve1/lxc/901/clone", vals("newid", "201", "full", "1"),
			201, "clone failed: simulated task failure (fault injection)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st := c.task(tc.method, tc.path, tc.params); st != tc.exit {
				t.Errorf("exit status %q, want %q", st, tc.exit)
			}
			if g, ok := srv.Guest(tc.vmid); ok {
				t.Errorf("guest %d left behind: %v", tc.vmid, g.Config)
			}
			if got := strings.Join(srv.Volumes("pve1", "local-lvm"), " "); got != before["local-lvm"] {
				t.Errorf("local-lvm holds %s, want %s", got, before["local-lvm"])
			}
		})
	}
	// The source of the container clone is not left locked either.
	if g, _ := srv.Guest(901); g.Config["lock"] != "" {
		t.Errorf("clone source left locked: %v", g.Config)
	}
}

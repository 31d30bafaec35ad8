package pve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/pvesim"
)

// The answers below have the shapes Proxmox VE 9 sends, as the Perl that
// builds them makes them (qemu-server and pve-container check_type and
// vmstatus, pve-manager Cluster.pm resources, pve-storage list_volumes,
// pve-common's network reader) and as other clients' bug reports show them
// (string cpulimit: go-proxmox #66, bpg #552, Telmate #159). A client that
// decodes strictly fails on each where it expects the simulator's earlier
// forms; every client method that reads one must decode it.
func TestClientDecodesRealAnswerShapes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		path  string // the request path the answer is for
		data  string
		check func(t *testing.T, c *Client)
	}{
		{"config with number keys as strings", "/qemu/100/config",
			`{"cpulimit":"1.5","migrate_downtime":"0.3","cores":2,"digest":"d"}`,
			func(t *testing.T, c *Client) {
				cfg, err := c.QemuConfig(ctx, "pve1", 100, false)
				if err != nil || cfg["cpulimit"] != "1.5" || cfg["migrate_downtime"] != "0.3" || cfg["cores"] != "2" {
					t.Errorf("config %v, %v", cfg, err)
				}
			}},
		{"container config with a string cpulimit", "/lxc/200/config", `{"cpulimit":"2.5","cores":1,"digest":"d"}`,
			func(t *testing.T, c *Client) {
				cfg, err := c.LxcConfig(ctx, "pve1", 200)
				if err != nil || cfg["cpulimit"] != "2.5" {
					t.Errorf("config %v, %v", cfg, err)
				}
			}},
		{"pending with a string cpulimit", "/qemu/100/pending",
			`[{"key":"cpulimit","value":"1.5","pending":"2"},{"key":"cores","value":2}]`,
			func(t *testing.T, c *Client) {
				p, err := c.QemuPending(ctx, "pve1", 100)
				if err != nil || len(p) != 2 || p[0].Value != "1.5" || p[0].Pending != "2" || !p[0].HasPending() {
					t.Errorf("pending %+v, %v", p, err)
				}
			}},
		{"container status with cpus a string and string pressures", "/lxc/200/status/current",
			`{"vmid":200,"name":"ct","type":"lxc","status":"running","cpus":"1.5","cpu":0.01,"pid":2200,"uptime":42,
			"maxmem":536870912,"mem":1000,"maxswap":536870912,"swap":0,"maxdisk":4294967296,"disk":100,"netin":0,"netout":0,
			"diskread":0,"diskwrite":0,"pressurecpusome":"0.00","pressurecpufull":"0.00","pressureiosome":"0.12",
			"pressureiofull":"0.00","pressurememorysome":"0.00","pressurememoryfull":"0.00","ha":{"managed":0}}`,
			func(t *testing.T, c *Client) {
				s, err := c.LxcStatus(ctx, "pve1", 200)
				if err != nil || s.Status != "running" || s.Uptime != 42 {
					t.Errorf("status %+v, %v", s, err)
				}
			}},
		{"running VM status with the QMP part", "/qemu/100/status/current",
			`{"vmid":100,"name":"vm","status":"running","qmpstatus":"running","cpus":2,"cpu":0.02,"pid":1100,"uptime":7,
			"maxmem":1073741824,"mem":536870912,"memhost":536870912,"freemem":536870912,"balloon":1073741824,
			"ballooninfo":{"actual":1073741824,"max_mem":1073741824,"total_mem":1073741824,"free_mem":536870912,"last_update":1},
			"balloon_min":268435456,"shares":1000,"maxdisk":1073741824,"disk":0,"netin":0,"netout":0,"diskread":0,"diskwrite":0,
			"nics":{"tap100i0":{"netin":0,"netout":0}},"blockstat":{"scsi0":{"rd_bytes":0,"wr_bytes":0,"timed_stats":[],"account_failed":true}},
			"proxmox-support":{"pbs-dirty-bitmap":true,"pbs-library-version":"2.0.1"},"pressurecpusome":0,"pressurememoryfull":0,
			"running-machine":"pc-i440fx-10.1+pve0","running-qemu":"10.1.2","serial":1,"spice":1,"clipboard":null,"agent":1,
			"tags":"a;b","ha":{"managed":1,"state":"started"}}`,
			func(t *testing.T, c *Client) {
				s, err := c.QemuStatus(ctx, "pve1", 100)
				if err != nil || s.QMPState != "running" || s.Tags != "a;b" || s.HA.State != "started" {
					t.Errorf("status %+v, %v", s, err)
				}
			}},
		{"cluster resources of 9.0.12 and later", "/cluster/resources",
			`[{"id":"lxc/200","type":"lxc","vmid":200,"node":"pve1","name":"ct","status":"running","template":0,"maxcpu":1.5,
			"cpu":0.01,"maxmem":536870912,"mem":1000,"memhost":1000,"maxdisk":4294967296,"disk":0,"uptime":42,"diskread":0,
			"diskwrite":0,"netin":0,"netout":0,"hastate":"started"},
			{"id":"node/pve1","type":"node","node":"pve1","status":"online","level":"","cgroup-mode":2,"hastate":"online",
			"maxcpu":16,"cpu":0.02,"maxmem":68719476736,"mem":2147483648,"maxdisk":107374182400,"disk":8589934592,"uptime":99},
			{"id":"network/pve1/zone/localnetwork","type":"network","network-type":"zone","network":"localnetwork","node":"pve1","status":"ok"},
			{"id":"network/pve1/zone/lab","type":"network","network-type":"zone","network":"lab","node":"pve1","status":"available","zone-type":"simple"}]`,
			func(t *testing.T, c *Client) {
				r, err := c.ClusterResources(ctx, "")
				if err != nil || len(r) != 4 || r[0].MaxCPU != 1.5 || r[0].HAState != "started" || r[1].HAState != "online" || r[3].Type != "network" {
					t.Errorf("resources %+v, %v", r, err)
				}
			}},
		{"storage content with tzst templates and no used on LVM-thin", "/storage/local/content",
			`[{"volid":"local:vztmpl/debian-13-standard_13.1-2_amd64.tar.zst","content":"vztmpl","format":"tzst","size":123,"ctime":1},
			{"volid":"local-lvm:vm-100-disk-0","content":"images","format":"raw","size":1073741824,"vmid":100,"ctime":1}]`,
			func(t *testing.T, c *Client) {
				v, err := c.StorageContent(ctx, "pve1", "local", "")
				if err != nil || len(v) != 2 || v[0].Format != "tzst" || v[0].FileName() != "debian-13-standard_13.1-2_amd64.tar.zst" || v[1].VMID != 100 {
					t.Errorf("content %+v, %v", v, err)
				}
			}},
		{"network list with active only on active interfaces", "/network",
			`[{"iface":"vmbr0","type":"bridge","active":1,"autostart":1,"families":["inet"]},{"iface":"vmbr9","type":"bridge","families":["inet"]}]`,
			func(t *testing.T, c *Client) {
				l, err := c.NetworkList(ctx, "pve1")
				if err != nil || len(l) != 2 || l[0].Active != 1 || l[1].Active != 0 {
					t.Errorf("network %+v, %v", l, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, tt.path) {
					http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotImplemented)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"data":`+tt.data+`}`)
			}))
			defer srv.Close()
			tt.check(t, newTestClient(t, srv.URL, nil))
		})
	}
}

// The same reads against the simulator, which sends those shapes.
func TestClientDecodesSimulatorShapes(t *testing.T) {
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: testToken, TokenSecret: "s3cret", StatusInterval: -1})
	tmpl := "local:vztmpl/debian-13-standard_13.1-2_amd64.tar.zst"
	if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: tmpl, Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, strings.TrimSuffix(sim.APIURL(), "/api2/json"), nil)
	ctx := context.Background()
	must := taskDone(t, c)
	must(c.QemuCreate(ctx, "pve1", 100, NewParams().Set("cpulimit", "1.5").Set("scsi0", "local-lvm:1").Set("agent", "1")))
	must(c.LxcCreate(ctx, "pve1", 200, NewParams().Set("ostemplate", tmpl).Set("rootfs", "local-lvm:1").Set("cpulimit", "2.5")))
	must(c.QemuStart(ctx, "pve1", 100))
	must(c.LxcStart(ctx, "pve1", 200))
	if cfg, err := c.QemuConfig(ctx, "pve1", 100, false); err != nil || cfg["cpulimit"] != "1.5" {
		t.Errorf("config %v, %v", cfg, err)
	}
	if p, err := c.LxcPending(ctx, "pve1", 200); err != nil || !hasPendingValue(p, "cpulimit", "2.5") {
		t.Errorf("pending %+v, %v", p, err)
	}
	if s, err := c.QemuStatus(ctx, "pve1", 100); err != nil || s.QMPState != "running" {
		t.Errorf("VM status %+v, %v", s, err)
	}
	if s, err := c.LxcStatus(ctx, "pve1", 200); err != nil || s.Status != "running" {
		t.Errorf("CT status %+v, %v", s, err)
	}
	res, err := c.ClusterResources(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range res {
		types = append(types, r.Type)
	}
	if got := strings.Join(types, ","); got != "qemu,lxc,node,storage,storage,storage,network" {
		t.Errorf("resource types %s", got)
	}
	if v, err := c.StorageContent(ctx, "pve1", "local", "vztmpl"); err != nil || len(v) != 1 || v[0].Format != "tzst" {
		t.Errorf("content %+v, %v", v, err)
	}
}

func hasPendingValue(p []PendingEntry, key, value string) bool {
	for _, e := range p {
		if e.Key == key {
			return e.Value == value
		}
	}
	return false
}

package pvesim

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// referenceResources is /cluster/resources as the simulator first built it
// (a list of structs and maps for encoding/json): the oracle the fast,
// cached encoder must match byte for byte.
func referenceResources(s *Server, typ string) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now().Unix()
	out := []any{}
	ids := make([]int, 0, len(s.state.Guests))
	for id := range s.state.Guests {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	poolOf := func(id int) string {
		for name, p := range s.state.Pools {
			if p.VMs[id] {
				return name
			}
		}
		return ""
	}
	if typ == "" {
		names := make([]string, 0, len(s.state.Pools))
		for name := range s.state.Pools {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			m := map[string]any{"id": "/pool/" + name, "pool": name, "type": "pool"}
			var uptime, mem, maxmem int64
			var cpu float64
			maxcpu := 0
			for _, id := range ids {
				r := referenceGuestRes(s, s.state.Guests[id], now)
				if poolOf(id) != name || r.Uptime == 0 {
					continue
				}
				uptime = max(uptime, r.Uptime)
				mem += r.Mem
				maxmem += r.MaxMem
				cpu = (cpu*float64(maxcpu) + r.CPU*float64(r.MaxCPU)) / float64(maxcpu+r.MaxCPU)
				maxcpu += r.MaxCPU
				m["uptime"], m["mem"], m["maxmem"], m["cpu"], m["maxcpu"] = uptime, mem, maxmem, cpu, maxcpu
			}
			out = append(out, m)
		}
	}
	if typ == "" || typ == "vm" {
		for _, id := range ids {
			r := referenceGuestRes(s, s.state.Guests[id], now)
			r.Pool = poolOf(id)
			out = append(out, r)
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.state.Nodes {
			m := map[string]any{"node": n.Name, "id": "node/" + n.Name, "type": "node", "cgroup-mode": 2, "level": ""}
			if s.faults.nodeOffline(n.Name) {
				m["status"] = "offline"
			} else {
				var cpu float64
				mem := 2 * gib
				for _, g := range s.state.Guests {
					if g.Node == n.Name && g.Running {
						mem += guestMaxMem(g)
						cpu += 0.01
					}
				}
				if mem > n.MaxMem {
					mem = n.MaxMem
				}
				m["status"] = "online"
				m["cpu"] = cpu
				m["maxcpu"] = n.MaxCPU
				m["mem"] = mem
				m["maxmem"] = n.MaxMem
				m["disk"] = 8 * gib
				m["maxdisk"] = n.MaxDisk
				m["uptime"] = int64(s.clock.Now().Sub(n.BootTime).Seconds())
			}
			out = append(out, m)
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.state.Nodes {
			if s.faults.nodeOffline(n.Name) {
				continue
			}
			for _, st := range s.state.Storages {
				shared := 0
				if st.Shared {
					shared = 1
				}
				out = append(out, map[string]any{
					"id": "storage/" + n.Name + "/" + st.ID, "type": "storage", "node": n.Name, "storage": st.ID,
					"status": "available", "content": strings.Join(st.Content, ","), "plugintype": st.Type,
					"shared": shared, "disk": s.state.usedBytes(n.Name, st.ID), "maxdisk": st.Total,
				})
			}
		}
	}
	if typ == "" {
		for _, n := range s.state.Nodes {
			out = append(out, map[string]any{"id": "network/" + n.Name + "/zone/localnetwork", "type": "network",
				"network-type": "zone", "network": "localnetwork", "node": n.Name, "status": "ok"})
		}
	}
	return out
}

// referenceGuestRes is the first guestRes, with separate lookups.
func referenceGuestRes(s *Server, g *Guest, now int64) guestRes {
	name := g.Name()
	if name == "" {
		name = defaultGuestName(g)
	}
	r := guestRes{ID: g.Type + "/" + strconv.Itoa(g.VMID), Type: g.Type, VMID: g.VMID, Node: g.Node, Name: name,
		MaxMem: guestMaxMem(g), MaxDisk: referenceMaxDisk(g), Tags: g.Conf["tags"], Lock: g.Conf["lock"], Status: "stopped"}
	if g.IsTemplate() {
		r.Template = 1
	}
	r.MaxCPU = guestCPUs(g.Type == "qemu", g.Conf["cores"], g.Conf["sockets"], g.Conf["vcpus"], g.Conf["cpulimit"], s.nodeCPUs(g.Node))
	if g.Running { // written out, not setRunning: the reference stands apart
		r.Status, r.Uptime, r.CPU = "running", now-g.StartedAt.Unix(), 0.01
		r.Mem = r.MaxMem / 2
		r.MemHost = r.Mem
	}
	return r
}

// referenceMaxDisk follows vmstatus with the generic parsers: bootdisk_size
// for a VM, the rootfs size (4 GiB without one) for a container.
func referenceMaxDisk(g *Guest) int64 {
	if g.Type != "qemu" {
		d, err := parsePropString(lxcRootfsFormat, g.Conf["rootfs"], "rootfs")
		if n, _ := ParseSize(d["size"]); err == nil && n > 0 {
			return n
		}
		return 4 << 30
	}
	var disks []string
	b, err := parsePropString(route.NamedProps("pve-qm-boot"), g.Conf["boot"], "boot")
	if g.Conf["boot"] == "" || err != nil || b["legacy"] != "" {
		if g.Conf["bootdisk"] != "" {
			disks = []string{g.Conf["bootdisk"]}
		}
	} else {
		disks = splitList(b["order"])
	}
	for _, k := range disks {
		if !isQemuDiskKey(k) || g.Conf[k] == "" {
			continue
		}
		d, err := parseDrive(k, g.Conf[k])
		if err != nil || d["media"] == "cdrom" || d["file"] == "" {
			continue
		}
		n, _ := ParseSize(d["size"])
		return n
	}
	return 0
}

func rawGET(t *testing.T, srv *Server, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.APIURL()+path, nil)
	req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	return b
}

// checkResources compares every type filter's answer with the oracle.
func checkResources(t *testing.T, srv *Server, stage string) {
	t.Helper()
	// Twice: the second round is answered from the cache.
	for _, typ := range []string{"", "vm", "node", "storage", "sdn", "", "vm", "node", "storage", "sdn"} {
		path := "/cluster/resources"
		if typ != "" {
			path += "?type=" + typ
		}
		got := rawGET(t, srv, path)
		want, err := json.Marshal(map[string]any{"data": referenceResources(srv, typ)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			lo := max(0, i-80)
			t.Fatalf("%s, type %q: answers differ at byte %d:\n got  ...%s\n want ...%s", stage, typ, i,
				got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)])
		}
	}
}

// TestClusterResourcesMatchesReference checks the encoded, cached answer
// against the reference through the changes that must invalidate it.
func TestClusterResourcesMatchesReference(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 500_000_000))
	srv, c := newSim(t, Options{Clock: clock, StatusInterval: -1})
	populate(t, srv, 60)
	for _, g := range []GuestSpec{
		{VMID: 500, Node: "pve2", Type: "lxc", Running: true, Config: map[string]string{"hostname": "ct<1>&x", "rootfs": "local-lvm:vm-500-disk-0,size=8G", "memory": "1024", "cores": "3"}},
		{VMID: 501, Node: "pve1", Config: map[string]string{"name": "tpl", "template": "1", "scsi0": "nfs-shared:base-501-disk-0,size=16G", "lock": "backup", "tags": "a;\"b\""}},
		{VMID: 503, Node: "pve3", Config: map[string]string{"efidisk0": "local-lvm:vm-503-disk-1,efitype=4m,size=528K", "sata0": "local-lvm:vm-503-disk-0,size=10G"}},
		{VMID: 504, Node: "pve3", Config: map[string]string{"bootdisk": "scsi9", "scsi0": "local-lvm:vm-504-disk-0,size=10G", "cores": "x"}},
		{VMID: 505, Node: "pve1", Running: true, Config: map[string]string{"scsi0": "local-lvm:vm-505-disk-0,size=1.5T", "ide0": "local:iso/x.iso,media=cdrom", "memory": "0"}},
		{VMID: 502, Node: "pve3", Running: true, Config: map[string]string{"name": "ünïcode", "memory": "current=4096", "sockets": "2", "cores": "4", "bootdisk": "virtio0", "virtio0": "local-lvm:vm-502-disk-0,size=33G"}},
	} {
		mustAddGuest(t, srv, g)
	}
	checkResources(t, srv, "populated")
	// Pools: listed first, with the sums of their running guests.
	c.mustOK("POST", "/pools", vals("poolid", "prod", "comment", "x"))
	c.mustOK("POST", "/pools", vals("poolid", "empty"))
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "500,501,502,1001,9999"))
	checkResources(t, srv, "with pools")

	// A write through the API.
	c.mustOK("PUT", "/nodes/pve1/qemu/1000/config", vals("name", "renamed", "tags", "x;y"))
	checkResources(t, srv, "after a config change")
	// The Go API.
	if err := srv.SetGuestRunning(1001, true); err != nil {
		t.Fatal(err)
	}
	srv.MutateGuest(1002, func(conf map[string]string) { conf["cores"] = "7" })
	checkResources(t, srv, "after Go API changes")
	// Time: uptimes move on.
	clock.Advance(90 * time.Second)
	checkResources(t, srv, "after time passed")
	// Faults: an offline node disappears from storage and sdn, shows offline.
	srv.SetNodeOnline("pve2", false)
	checkResources(t, srv, "with pve2 offline")
	srv.SetNodeOnline("pve2", true)
	// A task changing state in the background.
	srv2 := startSim(t, Options{Clock: clock, TaskSpeed: 1, StatusInterval: -1})
	c2 := newClient(t, srv2)
	upid := c2.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:4", "tags", "t")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	checkResources(t, srv2, "during a create")
	clock.Advance(durCreate)
	if st := c2.waitTask(upid); st != "OK" {
		t.Fatal(st)
	}
	checkResources(t, srv2, "after the create")
	if res := resourceOf(c2, 100); res["tags"] != "t" || res["maxdisk"] != float64(4<<30) {
		t.Fatalf("created guest %v", res)
	}
	checkResources(t, srv, "finally")
}

func TestGuestCPUsAndMemoryAsPvestatdReportsThem(t *testing.T) {
	tests := []struct {
		name                                 string
		qemu                                 bool
		cores, sockets, vcpus, cpulimit, mem string
		cpus                                 int
		maxMem                               int64
	}{
		{"qemu defaults: one socket, one core, 512 MiB", true, "", "", "", "", "", 1, 512 << 20},
		{"qemu sockets times cores", true, "4", "2", "", "", "2048", 8, 2048 << 20},
		{"qemu at most the node's CPUs", true, "32", "2", "", "", "", 16, 512 << 20},
		{"qemu vcpus wins", true, "8", "", "3", "", "", 3, 512 << 20},
		{"qemu memory as a property string", true, "", "", "", "", "current=1024", 1, 1024 << 20},
		{"lxc cores", false, "2", "", "", "", "1024", 2, 1024 << 20},
		{"lxc cpulimit without cores", false, "", "", "", "3", "", 3, 512 << 20},
		{"lxc neither: the node's CPUs", false, "", "", "", "", "", 16, 512 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guestCPUs(tt.qemu, tt.cores, tt.sockets, tt.vcpus, tt.cpulimit, 16); got != tt.cpus {
				t.Errorf("cpus %d, want %d", got, tt.cpus)
			}
			if got := maxMemOf(tt.qemu, tt.mem); got != tt.maxMem {
				t.Errorf("maxmem %d, want %d", got, tt.maxMem)
			}
		})
	}
}

// TestMaxDiskFollowsVmstatus checks maxdisk in /cluster/resources and
// status/current against vmstatus: a VM's first boot disk of `boot:
// order=` (or its legacy bootdisk) that is no CD-ROM, 0 when there is none
// (no fallback to the first disk); a container's rootfs size, 4 GiB
// without one.
func TestMaxDiskFollowsVmstatus(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		conf map[string]string
		want int64
	}{
		{"the first disk of the boot order", "qemu", map[string]string{
			"boot": "order=virtio1;scsi0;net0", "scsi0": "local-lvm:vm-100-disk-0,size=32G", "virtio1": "local-lvm:vm-100-disk-1,size=8G"}, 8 << 30},
		{"a CD-ROM and a cloud-init drive of the order are skipped", "qemu", map[string]string{
			"boot": "order=ide2;ide0;scsi0", "ide2": "local:iso/debian.iso,media=cdrom", "ide0": "local-lvm:vm-100-cloudinit,media=cdrom",
			"scsi0": "local-lvm:vm-100-disk-0,size=10G"}, 10 << 30},
		{"a drive of the order missing from the config is skipped", "qemu", map[string]string{
			"boot": "order=scsi5;scsi0", "scsi0": "local-lvm:vm-100-disk-0,size=3G"}, 3 << 30},
		{"only a NIC in the order: 0", "qemu", map[string]string{
			"boot": "order=net0", "scsi0": "local-lvm:vm-100-disk-0,size=32G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}, 0},
		{"the first boot disk without a size: 0, the next is not looked at", "qemu", map[string]string{
			"boot": "order=scsi0;scsi1", "scsi0": "local-lvm:vm-100-disk-0", "scsi1": "local-lvm:vm-100-disk-1,size=5G"}, 0},
		{"no boot and no bootdisk: 0, not the first disk", "qemu", map[string]string{
			"scsi0": "local-lvm:vm-100-disk-0,size=32G"}, 0},
		{"no boot: the bootdisk", "qemu", map[string]string{
			"bootdisk": "scsi1", "scsi0": "local-lvm:vm-100-disk-0,size=32G", "scsi1": "local-lvm:vm-100-disk-1,size=6G"}, 6 << 30},
		{"legacy boot letters: the bootdisk", "qemu", map[string]string{
			"boot": "cdn", "bootdisk": "virtio0", "virtio0": "local-lvm:vm-100-disk-0,size=7G", "scsi0": "local-lvm:vm-100-disk-1,size=1G"}, 7 << 30},
		{"a bootdisk that is a CD-ROM: 0", "qemu", map[string]string{
			"bootdisk": "ide2", "ide2": "local:iso/debian.iso,media=cdrom", "scsi0": "local-lvm:vm-100-disk-0,size=1G"}, 0},
		{"a container: its rootfs size", "lxc", map[string]string{
			"hostname": "ct", "rootfs": "local-lvm:subvol-100-disk-0,size=12G"}, 12 << 30},
		{"a container without a rootfs size: 4 GiB", "lxc", map[string]string{
			"hostname": "ct", "rootfs": "local-lvm:subvol-100-disk-0"}, 4 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fake clock: the reference answer is built at another instant.
			srv, c := newSim(t, Options{StatusInterval: -1, Clock: NewFakeClock(time.Unix(1_750_000_000, 0))})
			mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Type: tt.typ, Config: tt.conf})
			for _, running := range []bool{false, true} {
				if err := srv.SetGuestRunning(100, running); err != nil {
					t.Fatal(err)
				}
				if got := resourceOf(c, 100)["maxdisk"]; got != float64(tt.want) {
					t.Errorf("running %v: /cluster/resources maxdisk %v, want %d", running, got, tt.want)
				}
				st := c.mustOK("GET", "/nodes/pve1/"+tt.typ+"/100/status/current", nil).obj(t)
				if st["maxdisk"] != float64(tt.want) {
					t.Errorf("running %v: status/current maxdisk %v, want %d", running, st["maxdisk"], tt.want)
				}
			}
			checkResources(t, srv, tt.name)
		})
	}
}

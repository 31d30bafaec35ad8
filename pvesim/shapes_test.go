package pvesim

// Tests of the shape of answers: the JSON types and members real Proxmox
// VE 9 sends, which strictly decoding clients depend on.

import (
	"encoding/json"
	"testing"
)

// rawMembers decodes an object keeping each member's JSON text.
func rawMembers(t *testing.T, data json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not an object: %s", data)
	}
	return m
}

// rawList decodes a list of objects keeping each member's JSON text.
func rawList(t *testing.T, data json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var l []map[string]json.RawMessage
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("not a list of objects: %s", data)
	}
	return l
}

// check_type keeps a "number" key as the string it read from the config
// file (qemu-server PVE/QemuServer.pm, pve-container PVE/LXC/Config.pm):
// config, pending and snapshot config answer "1.5", never 1.5.
func TestConfigNumberKeysReadBackAsStrings(t *testing.T) {
	_, c := lxcSim(t, Options{Nodes: 1})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "cpulimit", "1.5", "migrate_downtime", "0.3", "cores", "2"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "cpulimit", "2.5"))
	c.task("POST", "/nodes/pve1/qemu/100/snapshot", vals("snapname", "s1"))
	want := map[string]string{"cpulimit": `"1.5"`, "migrate_downtime": `"0.3"`, "cores": `2`}
	for _, path := range []string{"/nodes/pve1/qemu/100/config", "/nodes/pve1/qemu/100/snapshot/s1/config"} {
		m := rawMembers(t, c.mustOK("GET", path, nil).Data)
		for k, w := range want {
			if got := string(m[k]); got != w {
				t.Errorf("%s %s = %s, want %s", path, k, got, w)
			}
		}
	}
	if got := string(rawMembers(t, c.mustOK("GET", "/nodes/pve1/lxc/200/config", nil).Data)["cpulimit"]); got != `"2.5"` {
		t.Errorf("lxc config cpulimit = %s, want \"2.5\"", got)
	}
	for _, path := range []string{"/nodes/pve1/qemu/100/pending", "/nodes/pve1/lxc/200/pending"} {
		found := false
		for _, e := range rawList(t, c.mustOK("GET", path, nil).Data) {
			if string(e["key"]) == `"cpulimit"` {
				found = true
				if v := e["value"]; len(v) == 0 || v[0] != '"' {
					t.Errorf("%s cpulimit value = %s, want a string", path, v)
				}
			}
		}
		if !found {
			t.Errorf("%s has no cpulimit entry", path)
		}
	}
}

package manifest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/proxmops/proxmops/internal/pveschema"
)

// pveAPIFile is the Proxmox VE API schema the checks read (pveschema
// finds it outside the repository).
const pveAPIFile = "apidata-pve-9.1.3.json"

type apiNode struct {
	Path     string                     `json:"path"`
	Info     map[string]json.RawMessage `json:"info"`
	Children []apiNode                  `json:"children"`
}

type apiParam struct {
	Enum    []string             `json:"enum"`
	Minimum any                  `json:"minimum"`
	Maximum any                  `json:"maximum"`
	Format  json.RawMessage      `json:"format"`
	Props   map[string]*apiParam `json:"-"`
}

func loadAPI(t *testing.T) []apiNode {
	t.Helper()
	data := pveschema.Read(t, pveAPIFile)
	var nodes []apiNode
	if err := json.Unmarshal(data, &nodes); err != nil {
		t.Fatal(err)
	}
	return nodes
}

func findAPI(nodes []apiNode, path string) *apiNode {
	for i := range nodes {
		if nodes[i].Path == path {
			return &nodes[i]
		}
		if n := findAPI(nodes[i].Children, path); n != nil {
			return n
		}
	}
	return nil
}

// apiEnum returns the enum of a parameter, or of a key inside a property
// string parameter when sub is set.
func apiEnum(t *testing.T, nodes []apiNode, path, method, param, sub string) []string {
	t.Helper()
	n := findAPI(nodes, path)
	if n == nil {
		t.Fatalf("no %s in the API schema", path)
	}
	var info struct {
		Parameters struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(n.Info[method], &info); err != nil {
		t.Fatal(err)
	}
	raw := info.Parameters.Properties[param]
	if sub != "" {
		var p struct {
			Format map[string]json.RawMessage `json:"format"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		raw = p.Format[sub]
	}
	var p apiParam
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("%s %s: %v", param, sub, err)
	}
	return p.Enum
}

func fieldEnum(t *testing.T, v any, field string) []string {
	t.Helper()
	for _, f := range structFields(reflect.TypeOf(v)) {
		if f.name == field {
			return f.enum
		}
	}
	t.Fatalf("%T has no field %s", v, field)
	return nil
}

// TestEnumsMatchProxmox: every enum the manifests take from Proxmox matches
// the official API schema exactly (bond modes: the Linux subset, OVS modes
// are not offered).
func TestEnumsMatchProxmox(t *testing.T) {
	api := loadAPI(t)
	tests := []struct {
		name         string
		ours         []string
		path, method string
		param, sub   string
		subset       bool
	}{
		{"VM ostype", fieldEnum(t, VirtualMachineSpec{}, "ostype"), "/nodes/{node}/qemu", "POST", "ostype", "", false},
		{"VM bios", fieldEnum(t, VirtualMachineSpec{}, "bios"), "/nodes/{node}/qemu", "POST", "bios", "", false},
		{"VM scsihw", fieldEnum(t, VirtualMachineSpec{}, "scsihw"), "/nodes/{node}/qemu", "POST", "scsihw", "", false},
		{"NIC model", fieldEnum(t, NIC{}, "model"), "/nodes/{node}/qemu", "POST", "net[n]", "model", false},
		{"disk cache", fieldEnum(t, Disk{}, "cache"), "/nodes/{node}/qemu", "POST", "scsi[n]", "cache", false},
		{"disk format", fieldEnum(t, Disk{}, "format"), "/nodes/{node}/qemu", "POST", "scsi[n]", "format", true},
		{"CT ostype", fieldEnum(t, ContainerSpec{}, "ostype"), "/nodes/{node}/lxc", "POST", "ostype", "", false},
		{"CT arch", fieldEnum(t, ContainerSpec{}, "arch"), "/nodes/{node}/lxc", "POST", "arch", "", false},
		{"zone type", fieldEnum(t, SdnZoneSpec{}, "type"), "/cluster/sdn/zones", "POST", "type", "", true},
		{"zone vlan protocol", fieldEnum(t, SdnZoneSpec{}, "vlanProtocol"), "/cluster/sdn/zones", "POST", "vlan-protocol", "", false},
		{"zone dhcp", fieldEnum(t, SdnZoneSpec{}, "dhcp"), "/cluster/sdn/zones", "POST", "dhcp", "", false},
		{"network type", fieldEnum(t, NetworkSpec{}, "type"), "/nodes/{node}/network", "POST", "type", "", true},
		{"bond mode", fieldEnum(t, NetworkSpec{}, "bondMode"), "/nodes/{node}/network", "POST", "bond_mode", "", true},
		{"hash policy", fieldEnum(t, NetworkSpec{}, "hashPolicy"), "/nodes/{node}/network", "POST", "bond_xmit_hash_policy", "", false},
		{"checksum algo", fieldEnum(t, Checksum{}, "algo"), "/nodes/{node}/storage/{storage}/download-url", "POST", "checksum-algorithm", "", false},
	}
	for _, tt := range tests {
		theirs := apiEnum(t, api, tt.path, tt.method, tt.param, tt.sub)
		if len(theirs) == 0 {
			t.Errorf("%s: no enum in the API schema", tt.name)
			continue
		}
		for _, v := range tt.ours {
			if !slices.Contains(theirs, v) {
				t.Errorf("%s: %q is not accepted by Proxmox (%v)", tt.name, v, theirs)
			}
		}
		if !tt.subset {
			for _, v := range theirs {
				if !slices.Contains(tt.ours, v) {
					t.Errorf("%s: Proxmox accepts %q, the manifest does not", tt.name, v)
				}
			}
		}
	}
}

// TestFormatsAgreeWithProxmox spot-checks our formats against values the
// Proxmox formats accept and reject (pve-storage-id, pve-tag, pve-vmid...).
func TestFormatsAgreeWithProxmox(t *testing.T) {
	tests := []struct {
		format string
		good   []string
		bad    []string
	}{
		{"storage-id", []string{"local", "local-lvm", "nfs-shared", "ceph.pool_1"}, []string{"Local", "1local", "local-", "a", "local lvm"}},
		{"tag", []string{"prod", "k8s_node", "v1.2", "a+b", "-x"[1:]}, []string{"bad tag", "-lead", "x;y", ""}},
		{"bridge", []string{"vmbr0", "vmbr1.40", "labnet"}, []string{"br idge", "a-very-long-bridge-name", ""}},
		{"iface", []string{"vmbr1", "bond0", "vmbr0.30", "enp3s0f0"}, []string{"0eth", "v", "bad-iface"}},
		{"sdn-id", []string{"lab", "vlans", "zone1"}, []string{"Lab", "lab-1", "toolongid", "1lab"}},
		{"mac", []string{"BC:24:11:5E:3A:01", "02:00:00:00:00:01"}, []string{"01:00:5E:00:00:01", "BC:24:11:5E:3A", "zz:24:11:5E:3A:01"}},
		{"dns-label", []string{"app-01", "a", "debian-12-tpl"}, []string{"App-01", "-a", "a-", "a_b", "a.b"}},
		{"machine", []string{"q35", "pc", "pc-i440fx-9.0", "pc-q35-8.1+pve1", "virt"}, []string{"q36", "pc-9"}},
		{"disk-slot", []string{"scsi0", "scsi30", "virtio15", "sata5"}, []string{"scsi31", "virtio16", "sata6", "ide0", "net0"}},
	}
	for _, tt := range tests {
		for _, v := range tt.good {
			if err := checkFormat(tt.format, v); err != nil {
				t.Errorf("%s rejects %q: %v", tt.format, v, err)
			}
		}
		for _, v := range tt.bad {
			if checkFormat(tt.format, v) == nil {
				t.Errorf("%s accepts %q", tt.format, v)
			}
		}
	}
}

package manifest

import (
	"strings"
	"testing"
	"testing/fstest"
)

const provisionCT = `apiVersion: proxmops.dev/v1
kind: Container
metadata: {name: web, node: pve1}
spec:
  vmid: 300
  template: debian-12-standard
  rootfs: {storage: local-lvm, size: 4}
  net:
    - {bridge: vmbr0, ip: dhcp}
    - {bridge: vmbr0, ip: 127.0.0.9/8}
  provision:
    packages: [apache2]
    files:
      - {path: /etc/motd, content: "hi\n"}
      - {path: /var/www/html/index.html, source: ../site/index.html, mode: "0640", owner: "www-data:www-data"}
    copy:
      - {source: ../lib/cookbook, path: /opt/cookbook}
    commands: [systemctl restart apache2]
`

func provisionFS(ct string) fstest.MapFS {
	return fstest.MapFS{
		"deploy/web.yaml":                     {Data: []byte(ct)},
		"site/index.html":                     {Data: []byte("<h1>from git</h1>\n")},
		"lib/cookbook/recipes/default.rb":     {Data: []byte("package 'apache2'\n")},
		"lib/cookbook/bin/run":                {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		"lib/cookbook/.git/config":            {Data: []byte("[core]\n")},
		"lib/cookbook/attributes/default.rb":  {Data: []byte("")},
		"lib/cookbook/templates/default/x.rb": {Data: []byte("x")},
	}
}

// Sources are read relative to the manifest's directory; the address is
// the first static IP of the NICs; hidden entries are not copied.
func TestProvisionSourcesAreReadFromTheRepository(t *testing.T) {
	set, err := LoadFS(provisionFS(provisionCT), ".")
	if err != nil {
		t.Fatal(err)
	}
	ct := set.Get(KindContainer, "web").(*Container)
	p := ct.Spec.Provision
	if string(p.Files[0].Data) != "hi\n" || string(p.Files[1].Data) != "<h1>from git</h1>\n" || !p.Loaded() {
		t.Fatalf("files %+v", p.Files)
	}
	var paths []string
	for _, f := range p.Copy[0].Tree {
		paths = append(paths, f.Path)
		if f.Path == "bin/run" && f.Mode != 0o755 || f.Path != "bin/run" && f.Mode != 0o644 {
			t.Errorf("%s mode %o", f.Path, f.Mode)
		}
	}
	if strings.Join(paths, " ") != "attributes/default.rb bin/run recipes/default.rb templates/default/x.rb" {
		t.Fatalf("tree %v", paths)
	}
	addr, port, user, ok := ct.ProvisionTarget()
	if addr != "127.0.0.9" || port != 22 || user != "root" || !ok {
		t.Fatalf("target %s %d %s %v", addr, port, user, ok)
	}
}

func TestProvisionValidation(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"source leaves the repository", "source: ../site/index.html", "source: ../../etc/passwd", "spec.provision.files[1].source: ../../etc/passwd leaves the repository"},
		{"missing source", "source: ../site/index.html", "source: ../site/missing.html", "spec.provision.files[1].source: ../site/missing.html: cannot read"},
		{"copy of a file", "source: ../lib/cookbook,", "source: ../site/index.html,", "spec.provision.copy[0].source: ../site/index.html: not a directory"},
		{"content and source", "{path: /etc/motd, content: \"hi\\n\"}", "{path: /etc/motd, content: x, source: ../site/index.html}", "content and source are mutually exclusive"},
		{"neither content nor source", "{path: /etc/motd, content: \"hi\\n\"}", "{path: /etc/motd}", "spec.provision.files[0]: set content or source"},
		{"no address", "ip: 127.0.0.9/8", "ip: dhcp", "no address to reach the guest at"},
		{"bad address", "  provision:\n", "  provision:\n    address: \"not an address!\"\n", "neither an IP address nor a DNS name"},
		{"bad port", "  provision:\n", "  provision:\n    port: 70000\n", "spec.provision.port"},
		{"absolute source", "source: ../site/index.html", "source: /etc/passwd", "not a relative path"},
		{"duplicate file", "{path: /etc/motd, content: \"hi\\n\"}", "{path: /var/www/html/index.html, content: x}", "already written by spec.provision.files[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(provisionCT, tc.from, tc.to, 1)
			if doc == provisionCT {
				t.Fatalf("%q not in the manifest", tc.from)
			}
			_, err := LoadFS(provisionFS(doc), ".")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "deploy/web.yaml:") {
				t.Fatalf("error not located in the file: %v", err)
			}
		})
	}
}

// A VM's address and user come from its cloud-init settings.
func TestVMProvisionTarget(t *testing.T) {
	vm := `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: app, node: pve1}
spec:
  vmid: 301
  image: {source: "local:import/debian.qcow2"}
  cloudInit:
    user: debian
    ipConfigs:
      - {slot: net1, ip: 127.0.0.12/8}
      - {slot: net0, ip: dhcp}
  net: [{bridge: vmbr0}, {bridge: vmbr0}]
  provision:
    port: 2222
    commands: [uptime]
`
	set, err := LoadFS(fstest.MapFS{"app.yaml": {Data: []byte(vm)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	addr, port, user, _ := set.Get(KindVirtualMachine, "app").(*VirtualMachine).ProvisionTarget()
	if addr != "127.0.0.12" || port != 2222 || user != "debian" {
		t.Fatalf("target %s %d %s", addr, port, user)
	}
}

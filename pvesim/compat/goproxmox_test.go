// Package compat drives the simulator with Proxmox clients written by others.
// It is a module of its own so those clients' dependencies stay out of
// proxmops' go.mod; `make test` runs it.
package compat

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxmops/proxmops/pvesim"
)

// The token the simulator is started with.
const (
	testTokenID     = "root@pam!proxmops"
	testTokenSecret = "s3cret"
)

// TestGoProxmoxClient drives the simulator with a client nobody here wrote
// (github.com/luthermonson/go-proxmox) over HTTPS on loopback, pinning the
// simulator's certificate fingerprint: version, nodes, storage content,
// appliance download, VM create, config update, start/stop, clone, a
// container, and task waiting with running tasks.
func TestGoProxmoxClient(t *testing.T) {
	srv := pvesim.New(pvesim.Options{Nodes: 2, TokenID: testTokenID, TokenSecret: testTokenSecret, TaskSpeed: 0.005, Seed: 11})
	if err := srv.StartTLS("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:import/debian-12-genericcloud-amd64.qcow2", Size: 3 << 30}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:iso/debian-12.iso", Size: 600 << 20}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := &goProxmoxSteps{t: t, ctx: ctx, c: pinnedClient(srv)}
	node := s.versionAndNodesAreReported(srv.Fingerprint())
	s.storageContentListsADownloadedAppliance(node)
	s.vmIsCreatedConfiguredStartedStoppedAndCloned(node)
	s.containerIsCreatedFromTheDownloadedTemplate(node)
}

// pinnedClient is a go-proxmox client that trusts the simulator's
// certificate by its fingerprint only.
func pinnedClient(srv *pvesim.Server) *proxmox.Client {
	fingerprint := srv.Fingerprint()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // verified below by fingerprint, as Proxmox clients pin self-signed certificates
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			sum := sha256.Sum256(raw[0])
			var parts []string
			for _, b := range sum {
				parts = append(parts, fmt.Sprintf("%02X", b))
			}
			if got := strings.Join(parts, ":"); got != fingerprint {
				return fmt.Errorf("fingerprint %s, want %s", got, fingerprint)
			}
			return nil
		},
	}}}
	return proxmox.NewClient(srv.APIURL(), proxmox.WithAPIToken(testTokenID, testTokenSecret), proxmox.WithHTTPClient(hc))
}

// goProxmoxSteps are the steps of TestGoProxmoxClient, run in order on one
// simulator.
type goProxmoxSteps struct {
	t   *testing.T
	ctx context.Context
	c   *proxmox.Client
}

// wait fails the test when a request or its task failed.
func (s *goProxmoxSteps) wait(what string, task *proxmox.Task, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
	if err := task.Wait(s.ctx, 5*time.Millisecond, 30*time.Second); err != nil {
		s.t.Fatalf("%s: task %s: %v", what, task.UPID, err)
	}
}

func (s *goProxmoxSteps) versionAndNodesAreReported(fingerprint string) *proxmox.Node {
	t, ctx, c := s.t, s.ctx, s.c
	v, err := c.Version(ctx)
	if err != nil || v.Version != "9.1.3" || v.Release != "9.1" {
		t.Fatalf("version %+v %v", v, err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].Node != "pve1" || nodes[0].Status != "online" || nodes[0].SSLFingerprint != fingerprint {
		t.Fatalf("nodes %+v %v", nodes, err)
	}
	node, err := c.Node(ctx, "pve1")
	if err != nil || !strings.HasPrefix(node.PVEVersion, "pve-manager/9.1.3") {
		t.Fatalf("node %+v %v", node, err)
	}
	return node
}

// storageContentListsADownloadedAppliance: storage content, including an
// appliance template downloaded through the client.
func (s *goProxmoxSteps) storageContentListsADownloadedAppliance(node *proxmox.Node) {
	t, ctx, c, wait := s.t, s.ctx, s.c, s.wait
	local, err := node.Storage(ctx, "local")
	if err != nil {
		t.Fatalf("storage: %v", err)
	}
	up, err := node.DownloadAppliance(ctx, "debian-12-standard_12.7-1_amd64.tar.zst", "local")
	wait("appliance download", proxmox.NewTask(proxmox.UPID(up), c), err)
	content, err := local.GetContent(ctx)
	if err != nil {
		t.Fatalf("content: %v", err)
	}
	have := map[string]*proxmox.StorageContent{}
	for _, item := range content {
		have[item.Volid] = item
	}
	if have["local:iso/debian-12.iso"] == nil || have["local:import/debian-12-genericcloud-amd64.qcow2"] == nil ||
		have["local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"] == nil {
		t.Errorf("content %v", have)
	}
	tmpl, err := node.VzTmpl(ctx, "debian-12-standard_12.7-1_amd64.tar.zst", "local")
	if err != nil || tmpl.Size == 0 {
		t.Errorf("vztmpl %+v %v", tmpl, err)
	}
}

// vmIsCreatedConfiguredStartedStoppedAndCloned: a VM importing the cloud
// image, then configured, started, stopped and cloned.
func (s *goProxmoxSteps) vmIsCreatedConfiguredStartedStoppedAndCloned(node *proxmox.Node) {
	t, ctx, wait := s.t, s.ctx, s.wait
	task, err := node.NewVirtualMachine(ctx, 120,
		proxmox.VirtualMachineOption{Name: "name", Value: "app-01"},
		proxmox.VirtualMachineOption{Name: "cores", Value: 2},
		proxmox.VirtualMachineOption{Name: "memory", Value: 2048},
		proxmox.VirtualMachineOption{Name: "scsihw", Value: "virtio-scsi-single"},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:0,import-from=local:import/debian-12-genericcloud-amd64.qcow2"},
		proxmox.VirtualMachineOption{Name: "ide2", Value: "local-lvm:cloudinit"},
		proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=vmbr0"},
		proxmox.VirtualMachineOption{Name: "tags", Value: "managed-by-proxmops"},
	)
	wait("create VM", task, err)
	vm, err := node.VirtualMachine(ctx, 120)
	if err != nil {
		t.Fatalf("get VM: %v", err)
	}
	if vm.Name != "app-01" || intp(vm.VirtualMachineConfig.Cores) != 2 || !strings.HasPrefix(vm.VirtualMachineConfig.SCSIs["scsi0"], "local-lvm:vm-120-disk-0,size=3G") ||
		!strings.HasPrefix(vm.VirtualMachineConfig.Nets["net0"], "virtio=BC:24:11:") || vm.Status != "stopped" {
		t.Errorf("VM %+v config %+v", vm, vm.VirtualMachineConfig)
	}
	task, err = vm.Config(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 4}, proxmox.VirtualMachineOption{Name: "description", Value: "via go-proxmox"})
	wait("config (POST)", task, err)
	if err := vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "onboot", Value: 1}); err != nil {
		t.Fatalf("config (PUT): %v", err)
	}
	task, err = vm.ResizeDisk(ctx, "scsi0", "+2G")
	wait("resize", task, err)
	task, err = vm.Start(ctx)
	wait("start", task, err)
	if err := vm.Ping(ctx); err != nil || !vm.IsRunning() || intp(vm.VirtualMachineConfig.Cores) != 4 || vm.VirtualMachineConfig.Description != "via go-proxmox" ||
		vm.VirtualMachineConfig.SCSIs["scsi0"] != "local-lvm:vm-120-disk-0,size=5G" {
		t.Errorf("after start: %v %+v", err, vm.VirtualMachineConfig)
	}
	// A failing task surfaces as the client's TaskFailedError.
	task, err = vm.ResizeDisk(ctx, "scsi0", "1G")
	if err != nil {
		t.Fatalf("shrink request: %v", err)
	}
	var failed *proxmox.TaskFailedError
	if err := task.Wait(ctx, 5*time.Millisecond, 30*time.Second); !errors.As(err, &failed) || !strings.Contains(failed.Error(), "shrinking disks is not supported") {
		t.Errorf("shrink: %v", err)
	}
	task, err = vm.Stop(ctx)
	wait("stop", task, err)
	newid, task, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 121, Name: "app-02", Full: true})
	wait("clone", task, err)
	clone, err := node.VirtualMachine(ctx, newid)
	if err != nil || clone.Name != "app-02" || clone.VirtualMachineConfig.Nets["net0"] == vm.VirtualMachineConfig.Nets["net0"] {
		t.Errorf("clone %+v %v", clone, err)
	}
	if _, err := node.VirtualMachine(ctx, 999); err == nil || !proxmox.IsNotFound(err) {
		t.Errorf("missing VM: %v", err)
	}
}

// containerIsCreatedFromTheDownloadedTemplate: a container from the
// downloaded template, counted in the cluster's resources with the two VMs.
func (s *goProxmoxSteps) containerIsCreatedFromTheDownloadedTemplate(node *proxmox.Node) {
	t, ctx, c, wait := s.t, s.ctx, s.c, s.wait
	task, err := node.NewContainer(ctx, 200,
		proxmox.ContainerOption{Name: "ostemplate", Value: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		proxmox.ContainerOption{Name: "hostname", Value: "ct-01"},
		proxmox.ContainerOption{Name: "rootfs", Value: "local-lvm:4"},
		proxmox.ContainerOption{Name: "net0", Value: "name=eth0,bridge=vmbr0,ip=dhcp"},
	)
	wait("create CT", task, err)
	ct, err := node.Container(ctx, 200)
	if err != nil || ct.ContainerConfig == nil || ct.ContainerConfig.Hostname != "ct-01" {
		t.Fatalf("container %+v %v", ct, err)
	}
	task, err = ct.Start(ctx)
	wait("start CT", task, err)
	vms, err := c.Cluster(ctx)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	res, err := vms.Resources(ctx, "vm")
	if err != nil || len(res) != 3 {
		t.Errorf("resources %v %v", res, err)
	}
}

func intp(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

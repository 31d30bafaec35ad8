package pve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrappersHitTheDocumentedEndpoints checks method, path and parameters
// of the typed calls against the Proxmox API paths they stand for.
func TestWrappersHitTheDocumentedEndpoints(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := r.Method + " " + strings.TrimPrefix(r.URL.EscapedPath(), "/api2/json")
		if r.URL.RawQuery != "" {
			line += "?" + r.URL.RawQuery
		}
		if len(body) > 0 {
			line += " " + string(body)
		}
		got = append(got, line)
		switch {
		case strings.HasSuffix(r.URL.Path, "/nextid"):
			writeData(w, "105")
		case r.Method == http.MethodGet:
			writeData(w, []any{})
		default:
			writeData(w, "UPID:pve1:00000001:00000002:65000000:x:1:root@pam!proxmops:")
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	ctx := context.Background()
	full := false
	calls := []struct {
		do   func() error
		want string
	}{
		{func() error { _, err := c.NextID(ctx); return err }, "GET /cluster/nextid"},
		{func() error { _, err := c.ClusterResources(ctx, "vm"); return err }, "GET /cluster/resources?type=vm"},
		{func() error { _, err := c.QemuPending(ctx, "pve1", 120); return err }, "GET /nodes/pve1/qemu/120/pending"},
		{func() error {
			_, err := c.QemuSetConfigAsync(ctx, "pve1", 120, NewParams().Set("scsi1", "local-lvm:5"))
			return err
		}, "POST /nodes/pve1/qemu/120/config scsi1=local-lvm%3A5"},
		{func() error { _, err := c.QemuResize(ctx, "pve1", 120, "scsi0", "+2G"); return err }, "PUT /nodes/pve1/qemu/120/resize disk=scsi0&size=%2B2G"},
		{func() error { _, err := c.QemuTemplate(ctx, "pve1", 9000); return err }, "POST /nodes/pve1/qemu/9000/template"},
		{func() error {
			_, err := c.QemuClone(ctx, "pve1", 9000, CloneOptions{NewID: 130, Name: "app-02", Full: &full, Target: "pve2"})
			return err
		}, "POST /nodes/pve1/qemu/9000/clone newid=130&name=app-02&full=0&target=pve2"},
		{func() error { _, err := c.QemuShutdown(ctx, "pve1", 120, 60, true); return err }, "POST /nodes/pve1/qemu/120/status/shutdown timeout=60&forceStop=1"},
		{func() error { _, err := c.QemuReboot(ctx, "pve1", 120); return err }, "POST /nodes/pve1/qemu/120/status/reboot"},
		{func() error {
			return c.SetVolumeNotes(ctx, "pve1", "local", "local:iso/a.iso", "managed-by-proxmops x")
		}, "PUT /nodes/pve1/storage/local/content/local:iso%2Fa.iso notes=managed-by-proxmops%20x"},
		{func() error {
			_, err := c.DownloadURL(ctx, "pve1", "local", DownloadOptions{Content: "iso", Filename: "a.iso", URL: "http://127.0.0.1/a.iso", Checksum: "AB", ChecksumAlgorithm: "sha256"})
			return err
		}, "POST /nodes/pve1/storage/local/download-url content=iso&filename=a.iso&url=http%3A%2F%2F127.0.0.1%2Fa.iso&checksum=ab&checksum-algorithm=sha256"},
		{func() error {
			_, err := c.LxcCreate(ctx, "pve1", 201, NewParams().Set("ostemplate", "local:vztmpl/d.tar.zst"))
			return err
		}, "POST /nodes/pve1/lxc vmid=201&ostemplate=local%3Avztmpl%2Fd.tar.zst"},
		{func() error { return c.LxcSetConfig(ctx, "pve1", 201, NewParams().SetInt("cores", 2)) }, "PUT /nodes/pve1/lxc/201/config cores=2"},
		{func() error { _, err := c.LxcPower(ctx, "pve1", 201, "start", nil); return err }, "POST /nodes/pve1/lxc/201/status/start"},
		{func() error { _, err := c.NetworkList(ctx, "pve1"); return err }, "GET /nodes/pve1/network"},
		{func() error { _, err := c.NetworkApply(ctx, "pve1"); return err }, "PUT /nodes/pve1/network"},
		{func() error { return c.NetworkRevert(ctx, "pve1") }, "DELETE /nodes/pve1/network"},
		{func() error { _, err := c.SDNVnets(ctx); return err }, "GET /cluster/sdn/vnets?pending=1"},
		{func() error { _, err := c.SDNApply(ctx); return err }, "PUT /cluster/sdn"},
		{func() error {
			_, err := c.NodeTasks(ctx, "pve1", TaskFilter{Type: "download", Issuer: "root@pam!proxmops", Limit: 5})
			return err
		}, "GET /nodes/pve1/tasks?typefilter=download&userfilter=root%40pam&limit=5"},
	}
	if _, err := c.DownloadURL(ctx, "pve1", "local", DownloadOptions{Content: "iso", Filename: "a.iso", URL: "http://x", Checksum: "ab"}); err == nil {
		t.Fatal("a checksum without its algorithm was sent")
	}
	for _, call := range calls {
		got = nil
		if err := call.do(); err != nil {
			t.Fatalf("%s: %v", call.want, err)
		}
		if len(got) != 1 || got[0] != call.want {
			t.Errorf("got %q, want %q", got, call.want)
		}
	}
}

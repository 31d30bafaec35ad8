package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// imageVM is a VM from a cloud image at SOURCE, FORMAT lines optional.
const imageVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: NAME
  node: pve1
spec:
  vmid: VMID
  image:
    source: SOURCE
FORMAT  disks:
    - storage: local-lvm
      size: 8G
`

func imageManifest(name, vmid, source, format string) string {
	f := ""
	if format != "" {
		f = "    format: " + format + "\n"
	}
	r := strings.NewReplacer("NAME", name, "VMID", vmid, "SOURCE", source, "FORMAT", f)
	return r.Replace(imageVM)
}

// imageServer serves a raw disk named .img (as OpenWrt ships them), a VMDK,
// and a qcow2 misnamed .vmdk.
func imageServer(t *testing.T) *httptest.Server {
	vmdk := make([]byte, 512)
	copy(vmdk, "KDMV")
	binary.LittleEndian.PutUint64(vmdk[12:], uint64(2<<30/512))
	files := map[string][]byte{
		"/openwrt-combined.img": bytes.Repeat([]byte{0xeb, 0x63, 0x90}, 4096),
		"/appliance.vmdk":       vmdk,
		"/misnamed.vmdk":        qcow2Image(2 << 30),
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := files[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// image.format names the stored file, so Proxmox checks and imports the
// image as that format: a raw .img is stored as .raw, a .vmdk as .vmdk.
func TestImageFormatNamesTheImportedFile(t *testing.T) {
	e := newEnv(t)
	hs := imageServer(t)
	e.write("vms/router.yaml", imageManifest("router", "140", hs.URL+"/openwrt-combined.img", "raw"))
	e.write("vms/appliance.yaml", imageManifest("appliance", "141", hs.URL+"/appliance.vmdk", ""))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	e.assertInSync(eng)
	vols := e.sim.Volumes("pve1", "local")
	if !contains(vols, "local:import/openwrt-combined.raw") || !contains(vols, "local:import/appliance.vmdk") {
		t.Fatalf("import volumes %v", vols)
	}
	if g := e.guest(140); !strings.HasPrefix(g.Config["scsi0"], "local-lvm:vm-140-disk-0") {
		t.Fatalf("router: %v", g.Config)
	}
	if g := e.guest(141); !strings.HasPrefix(g.Config["scsi0"], "local-lvm:vm-141-disk-0") {
		t.Fatalf("appliance: %v", g.Config)
	}
}

// A file whose content is not the format its name implies fails the
// download with Proxmox's qemu-img text.
func TestImageOfTheWrongFormatFailsTheDownload(t *testing.T) {
	e := newEnv(t)
	hs := imageServer(t)
	e.write("vms/bad.yaml", imageManifest("bad", "142", hs.URL+"/misnamed.vmdk", ""))
	_, rep := e.apply(e.engine(engine.Options{}))
	if rep.Failed != 1 || !strings.Contains(rep.Results[0].Error, "failed to verify file: failed to query file information with qemu-img") {
		t.Fatalf("%+v", rep.Results)
	}
	if contains(e.sim.Volumes("pve1", "local"), "local:import/misnamed.vmdk") {
		t.Fatal("misnamed image stored")
	}
}

// A compressed image is refused in the plan (Proxmox would store it as is
// and fail to import it); nothing is downloaded.
func TestCompressedImageIsRefusedBeforeAnyDownload(t *testing.T) {
	e := newEnv(t)
	hs := imageServer(t)
	e.write("vms/c.yaml", imageManifest("c", "143", hs.URL+"/openwrt-combined.img", ""))
	d := e.desired()
	d.Specs(engine.KindVirtualMachine)[0].(*engine.VMSpec).Image.URL = hs.URL + "/openwrt-combined.img.gz"
	p, err := e.engine(engine.Options{}).Plan(context.Background(), d, "x")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Find(engine.KindVirtualMachine, "c")
	if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "is compressed (.gz)") {
		t.Fatalf("%+v", a)
	}
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/storage/{storage}/download-url"); n != 0 {
		t.Fatalf("%d downloads", n)
	}
}

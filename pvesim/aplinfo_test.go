package pvesim

import (
	"archive/tar"
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAplinfoCatalogue(t *testing.T) {
	_, c := newSim(t, Options{})
	list := c.mustOK("GET", "/nodes/pve1/aplinfo", nil).list(t)
	byName := map[string]map[string]any{}
	for _, a := range list {
		byName[a["template"].(string)] = a
	}
	for _, want := range []string{"debian-12-standard_12.7-1_amd64.tar.zst", "debian-13-standard_13.1-2_amd64.tar.zst",
		"ubuntu-24.04-standard_24.04-2_amd64.tar.zst", "alpine-3.22-default_20250617_amd64.tar.xz"} {
		a := byName[want]
		if a == nil {
			t.Errorf("catalogue lacks %s", want)
			continue
		}
		content, ok := ApplianceContent(want)
		sum := sha512.Sum512(content)
		if !ok || a["sha512sum"] != hex.EncodeToString(sum[:]) || a["type"] != "lxc" || a["section"] != "system" ||
			!strings.HasSuffix(a["location"].(string), "/"+want) || !strings.HasPrefix(want, a["package"].(string)+"_") {
			t.Errorf("%s: %v", want, a)
		}
		again, _ := ApplianceContent(want)
		if !bytes.Equal(content, again) {
			t.Errorf("%s is not deterministic", want)
		}
	}
	if _, ok := ApplianceContent("nope.tar.zst"); ok {
		t.Errorf("unknown template has content")
	}
}

func TestAplinfoDownload(t *testing.T) {
	srv, c := newSim(t, Options{})
	const tmpl = "debian-12-standard_12.7-1_amd64.tar.zst"
	refusals := []struct {
		params url2
		status int
		reason string
		errors map[string]string
	}{
		{url2{"storage", "local", "template", "nope_1.0_amd64.tar.zst"}, 400, "Parameter verification failed.", map[string]string{"template": "no such template"}},
		{url2{"storage", "local-lvm", "template", tmpl}, 500, "storage 'local-lvm' does not support templates", nil},
		{url2{"storage", "nope", "template", tmpl}, 500, "storage 'nope' does not exist", nil},
		{url2{"template", tmpl}, 400, "Parameter verification failed.", map[string]string{"storage": "property is missing and it is not optional"}},
	}
	for _, tt := range refusals {
		r := c.do("POST", "/nodes/pve1/aplinfo", vals(tt.params...))
		if r.Status != tt.status || r.Reason != tt.reason {
			t.Errorf("%v: %d %q (%s)", tt.params, r.Status, r.Reason, r.Body)
		}
		for k, v := range tt.errors {
			if r.Errors[k] != v {
				t.Errorf("%v: errors[%s] = %q", tt.params, k, r.Errors[k])
			}
		}
	}
	upid := c.mustOK("POST", "/nodes/pve1/aplinfo", vals("storage", "local", "template", tmpl)).str(t)
	if info, _ := ParseUPID(upid); info.Type != "download" || info.ID != tmpl {
		t.Errorf("upid %s", upid)
	}
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("download: %s", st)
	}
	if vols := srv.Volumes("pve1", "local"); len(vols) != 1 || vols[0] != "local:vztmpl/"+tmpl {
		t.Errorf("local holds %v", vols)
	}
	if vols := srv.Volumes("pve2", "local"); len(vols) != 0 {
		t.Errorf("pve2 local holds %v", vols)
	}
	log := c.mustOK("GET", "/nodes/pve1/tasks/"+upid+"/log", nil).list(t)
	if len(log) < 2 || !strings.Contains(log[0]["t"].(string), "/var/lib/vz/template/cache/"+tmpl) {
		t.Errorf("task log %v", log)
	}
	// The downloaded template creates a container.
	st := c.task("POST", "/nodes/pve1/lxc", vals("vmid", "100", "ostemplate", "local:vztmpl/"+tmpl, "rootfs", "local-lvm:2"))
	if st != "OK" {
		t.Fatalf("create from the downloaded template: %s", st)
	}
	// The shared storage takes templates too, visible on every node.
	c.task("POST", "/nodes/pve2/aplinfo", vals("storage", "nfs-shared", "template", "alpine-3.22-default_20250617_amd64.tar.xz"))
	if vols := srv.Volumes("pve3", "nfs-shared"); len(vols) != 1 {
		t.Errorf("nfs-shared from pve3: %v", vols)
	}
	st = c.task("POST", "/nodes/pve3/lxc", vals("vmid", "101", "ostemplate", "nfs-shared:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz", "rootfs", "nfs-shared:1"))
	if st != "OK" {
		t.Fatalf("create from alpine: %s", st)
	}
	if cfg := c.mustOK("GET", "/nodes/pve3/lxc/101/config", nil).obj(t); cfg["ostype"] != "alpine" || cfg["rootfs"] != "nfs-shared:101/vm-101-disk-0.raw,size=1G" {
		t.Errorf("alpine CT: %v", cfg)
	}
}

type url2 []string

// TestApplianceArchives reads the generated archives back: the .zst frame
// with a small reader of stored blocks, both formats with the system's
// zstd and xz when they are installed.
func TestApplianceArchives(t *testing.T) {
	for _, a := range Appliances {
		content, _ := ApplianceContent(a.Template)
		if strings.HasSuffix(a.Template, ".zst") {
			raw, err := readStoredZstd(content)
			if err != nil {
				t.Fatalf("%s: %v", a.Template, err)
			}
			files := tarFiles(t, raw)
			if !strings.Contains(files["./etc/os-release"], "ID="+a.ReleaseID) {
				t.Errorf("%s: os-release %q", a.Template, files["./etc/os-release"])
			}
		}
		tool := map[bool]string{true: "zstd", false: "xz"}[strings.HasSuffix(a.Template, ".zst")]
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("%s not installed: %s checked by the built-in reader only", tool, a.Template)
			continue
		}
		path := filepath.Join(t.TempDir(), a.Template)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(tool, "-d", "-c", path).Output()
		if err != nil {
			t.Fatalf("%s -d %s: %v", tool, a.Template, err)
		}
		if files := tarFiles(t, out); !strings.Contains(files["./etc/pve-template"], "package: "+a.Package) {
			t.Errorf("%s: %v", a.Template, files)
		}
	}
}

func readStoredZstd(b []byte) ([]byte, error) {
	if len(b) < 9 || !bytes.Equal(b[:4], []byte{0x28, 0xB5, 0x2F, 0xFD}) || b[4] != 0xA0 {
		return nil, io.ErrUnexpectedEOF
	}
	size := binary.LittleEndian.Uint32(b[5:9])
	var out []byte
	for off := 9; off+3 <= len(b); {
		hdr := uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16
		n := int(hdr >> 3)
		if (hdr>>1)&3 != 0 || off+3+n > len(b) {
			return nil, io.ErrUnexpectedEOF
		}
		out = append(out, b[off+3:off+3+n]...)
		off += 3 + n
		if hdr&1 == 1 {
			break
		}
	}
	if uint32(len(out)) != size {
		return nil, io.ErrShortBuffer
	}
	return out, nil
}

func tarFiles(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
}

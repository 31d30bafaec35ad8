package pvesim

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func qcow2Image(virtual int64, pad int) []byte {
	b := make([]byte, 512+pad)
	copy(b, "QFI\xfb")
	binary.BigEndian.PutUint32(b[4:], 3)
	binary.BigEndian.PutUint64(b[24:], uint64(virtual))
	return b
}

func fileServer(t *testing.T, files map[string][]byte) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestDownloadURL(t *testing.T) {
	iso := bytes.Repeat([]byte("iso!"), 40<<10)
	img := qcow2Image(10<<30, 4096)
	files := map[string][]byte{"/debian.iso": iso, "/noble.img": img, "/fake.qcow2": []byte("not an image"), "/ct.tar.zst": []byte("tar")}
	hs := fileServer(t, files)
	_, c := newSim(t, Options{})
	dl := func(extra ...string) url.Values { return vals(extra...) }

	st := c.task("POST", "/nodes/pve1/storage/local/download-url", dl("content", "iso", "filename", "debian.iso", "url", hs.URL+"/debian.iso", "checksum", sha(iso), "checksum-algorithm", "sha256"))
	if st != "OK" {
		t.Fatalf("iso download: %s", st)
	}
	list := c.mustOK("GET", "/nodes/pve1/storage/local/content", vals("content", "iso")).list(t)
	if len(list) != 1 || list[0]["volid"] != "local:iso/debian.iso" || list[0]["size"] != float64(len(iso)) || list[0]["format"] != "iso" {
		t.Fatalf("content %v", list)
	}
	// Local storage is per node.
	if other := c.mustOK("GET", "/nodes/pve2/storage/local/content", nil).list(t); len(other) != 0 {
		t.Fatalf("pve2 sees pve1's local content: %v", other)
	}
	info := c.mustOK("GET", "/nodes/pve1/storage/local/content/"+url.PathEscape("local:iso/debian.iso"), nil).obj(t)
	if info["path"] != "/var/lib/vz/template/iso/debian.iso" {
		t.Fatalf("info %v", info)
	}
	if st := c.task("POST", "/nodes/pve1/storage/local/download-url", dl("content", "iso", "filename", "debian.iso", "url", hs.URL+"/debian.iso")); st != "refusing to override existing file '/var/lib/vz/template/iso/debian.iso'" {
		t.Fatalf("overwrite: %s", st)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/storage/local/download-url", dl("content", "iso", "filename", "debian.iso", "url", hs.URL+"/debian.iso", "checksum", sha(iso), "checksum-algorithm", "sha256"))

	// A cloud image stored for import, sized from its qcow2 header, then imported.
	mustTaskOK(t, c, "POST", "/nodes/pve1/storage/local/download-url", dl("content", "import", "filename", "noble.qcow2", "url", hs.URL+"/noble.img"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "200", "scsi0", "local-lvm:0,import-from=local:import/noble.qcow2"))
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/200/config", nil).obj(t); cfg["scsi0"] != "local-lvm:vm-200-disk-0,size=10G" {
		t.Fatalf("imported disk %v", cfg["scsi0"])
	}

	upid := c.mustOK("POST", "/nodes/pve1/storage/local/download-url", dl("content", "iso", "filename", "bad.iso", "url", hs.URL+"/debian.iso", "checksum", strings.Repeat("0", 64), "checksum-algorithm", "sha256")).str(t)
	if st := c.waitTask(upid); st != "checksum mismatch: got '"+sha(iso)+"' != expect '"+strings.Repeat("0", 64)+"'" {
		t.Fatalf("checksum mismatch: %s", st)
	}
	info2, _ := ParseUPID(upid)
	if info2.Type != "download" || info2.ID != "bad.iso" {
		t.Fatalf("upid %v", info2)
	}

	tests := []struct {
		name    string
		storage string
		params  url.Values
		status  int
		key     string
		msg     string
	}{
		{"img not accepted for import", "local", dl("content", "import", "filename", "noble.img", "url", hs.URL+"/noble.img"), 400, "filename", "invalid filename or wrong extension"},
		{"iso extension", "local", dl("content", "iso", "filename", "debian.qcow2", "url", hs.URL+"/debian.iso"), 400, "filename", "wrong file extension"},
		{"vztmpl extension", "local", dl("content", "vztmpl", "filename", "ct.zip", "url", hs.URL+"/ct.tar.zst"), 400, "filename", "wrong file extension"},
		{"checksum needs algorithm", "local", dl("content", "iso", "filename", "a.iso", "url", hs.URL+"/debian.iso", "checksum", "abc"), 400, "checksum-algorithm", "missing property required by 'checksum'"},
		{"algorithm needs checksum", "local", dl("content", "iso", "filename", "a.iso", "url", hs.URL+"/debian.iso", "checksum-algorithm", "sha256"), 400, "checksum", "missing property required by 'checksum-algorithm'"},
		{"url scheme", "local", dl("content", "iso", "filename", "a.iso", "url", "ftp://127.0.0.1/a.iso"), 400, "url", "value does not match the regex pattern"},
		{"content enum", "local", dl("content", "snippets", "filename", "a.yaml", "url", hs.URL+"/a"), 400, "content", "value 'snippets' does not have a value in the enumeration 'iso, vztmpl, import'"},
		{"not file based", "local-lvm", dl("content", "iso", "filename", "a.iso", "url", hs.URL+"/debian.iso"), 500, "", "can't upload to storage type 'lvmthin', not a file based storage!\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do("POST", "/nodes/pve1/storage/"+tt.storage+"/download-url", tt.params)
			if r.Status != tt.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tt.key != "" && r.Errors[tt.key] != tt.msg || tt.key == "" && r.Message != tt.msg {
				t.Fatalf("%s", r.Body)
			}
		})
	}

	taskFailures := []struct{ name, content, filename, path, want string }{
		{"not found", "iso", "missing.iso", "/missing.iso", "download failed: command 'wget --progress=dot:giga -O <tmpfile> " + hs.URL + "/missing.iso' failed: exit code 8"},
		{"not a qcow2", "import", "fake.qcow2", "/fake.qcow2", "failed to verify file: failed to query file information with qemu-img"},
	}
	for _, tt := range taskFailures {
		t.Run(tt.name, func(t *testing.T) {
			if st := c.task("POST", "/nodes/pve1/storage/local/download-url", dl("content", tt.content, "filename", tt.filename, "url", hs.URL+tt.path)); st != tt.want {
				t.Fatalf("%q", st)
			}
		})
	}

	mustTaskOK(t, c, "DELETE", "/nodes/pve1/storage/local/content/local:iso/debian.iso", nil)
	if r := c.do("GET", "/nodes/pve1/storage/local/content/local:iso/debian.iso", nil); r.Status != 500 {
		t.Fatalf("deleted volume still there: %s", r.Body)
	}
}

func TestUpload(t *testing.T) {
	srv, c := newSim(t, Options{})
	upload := func(content, filename string, data []byte) apiResp {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("content", content)
		fw, _ := mw.CreateFormFile("filename", filename)
		fw.Write(data)
		mw.Close()
		req, _ := http.NewRequest("POST", srv.APIURL()+"/nodes/pve1/storage/nfs-shared/upload", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
		return c.send(req)
	}
	r := upload("iso", "tiny.iso", []byte("data"))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if st := c.waitTask(r.str(t)); st != "OK" {
		t.Fatal(st)
	}
	// Shared storage: every node sees the file.
	if list := c.mustOK("GET", "/nodes/pve3/storage/nfs-shared/content", nil).list(t); len(list) != 1 || list[0]["volid"] != "nfs-shared:iso/tiny.iso" {
		t.Fatalf("content %v", list)
	}
	if r := upload("snippets", "user.yaml", []byte("#cloud-config")); r.Status != 400 || !strings.Contains(r.Errors["content"], "enumeration") {
		t.Fatalf("snippets upload: %d %s", r.Status, r.Body)
	}
}

// TestDownloadsStayOnLoopback: by default the simulator fetches only from
// loopback, so no test or demo reaches the network by accident. None of
// these addresses is ever contacted: each is refused before any lookup or
// connection.
func TestDownloadsStayOnLoopback(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.1/elsewhere.iso", http.StatusFound)
	}))
	t.Cleanup(hs.Close)
	_, c := newSim(t, Options{})
	for _, tt := range []struct{ name, url string }{
		{"remote address", "http://192.0.2.1/a.iso"},
		{"host name", "https://images.example.invalid/a.iso"},
		{"redirect off loopback", hs.URL + "/a.iso"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := c.task("POST", "/nodes/pve1/storage/local/download-url", vals("content", "iso", "filename", "a.iso", "url", tt.url))
			if !strings.Contains(st, "pvesim downloads only from loopback addresses") {
				t.Fatalf("task ended %q, want a refusal", st)
			}
		})
	}
	if got := c.mustOK("GET", "/nodes/pve1/storage/local/content", vals("content", "iso")).list(t); len(got) != 0 {
		t.Fatalf("refused downloads left volumes: %v", got)
	}
}

// TestNotesOnlyForBackups checks pve-storage's update_volume_notes: the
// directory plugins (DirPlugin.pm, used by dir and nfs) refuse notes on
// anything but a backup with a 500, Plugin.pm's refuses them on LVM-thin
// altogether, and the listing (Plugin.pm list_volumes) and the info read
// give notes for backups only.
func TestNotesOnlyForBackups(t *testing.T) {
	srv, c := newSim(t, Options{})
	for _, v := range []VolumeSpec{
		{Node: "pve1", VolID: "local:iso/a.iso", Size: 10, Notes: "set behind the API"},
		{Node: "pve1", VolID: "local:vztmpl/a.tar.zst", Size: 10},
		{Node: "pve1", VolID: "local:import/a.qcow2", Size: 10},
		{Node: "pve1", VolID: "nfs-shared:iso/b.iso", Size: 10},
		{Node: "pve1", VolID: "local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst", Size: 10},
		{Node: "pve1", VolID: "local-lvm:vm-100-disk-0", Size: 10},
	} {
		mustAddVolume(t, srv, v)
	}
	for _, tc := range []struct {
		storage, volid string
		status         int
		reason         string
	}{
		{"local", "local:iso/a.iso", 500, "only backups can have notes"},
		{"local", "local:vztmpl/a.tar.zst", 500, "only backups can have notes"},
		{"local", "local:import/a.qcow2", 500, "only backups can have notes"},
		{"nfs-shared", "nfs-shared:iso/b.iso", 500, "only backups can have notes"},
		{"local-lvm", "local-lvm:vm-100-disk-0", 500, "volume notes are not supported for PVE::Storage::LvmThinPlugin at /usr/share/perl5/PVE/Storage/Plugin.pm line 1300."},
		{"local", "local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst", 200, ""},
	} {
		r := c.do("PUT", "/nodes/pve1/storage/"+tc.storage+"/content/"+url.PathEscape(tc.volid), vals("notes", "first line\nsecond"))
		if r.Status != tc.status || (tc.reason != "" && r.Reason != tc.reason) {
			t.Errorf("notes on %s: %d %q, want %d %q", tc.volid, r.Status, r.Reason, tc.status, tc.reason)
		}
	}
	for _, e := range c.mustOK("GET", "/nodes/pve1/storage/local/content", nil).list(t) {
		notes, has := e["notes"]
		if e["content"] == "backup" {
			if notes != "first line" {
				t.Errorf("backup listed with notes %v, want the first line", notes)
			}
		} else if has {
			t.Errorf("%v listed with notes %v", e["volid"], notes)
		}
	}
	info := c.mustOK("GET", "/nodes/pve1/storage/local/content/"+url.PathEscape("local:iso/a.iso"), nil).obj(t)
	if _, has := info["notes"]; has {
		t.Errorf("ISO info has notes: %v", info)
	}
	if _, has := info["protected"]; has {
		t.Errorf("ISO info has protected: %v", info)
	}
	info = c.mustOK("GET", "/nodes/pve1/storage/local/content/"+url.PathEscape("local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst"), nil).obj(t)
	if info["notes"] != "first line\nsecond" || info["protected"] != float64(0) {
		t.Errorf("backup info %v", info)
	}
}

// vmdkImage is a VMDK sparse extent header of the given virtual size.
func vmdkImage(virtual int64) []byte {
	b := make([]byte, 512)
	copy(b, "KDMV")
	binary.LittleEndian.PutUint32(b[4:], 1)
	binary.LittleEndian.PutUint64(b[12:], uint64(virtual/512))
	return b
}

// TestDownloadChecksImportFormatByName checks download_url's
// assert_file_validity for import content: file_size_info runs qemu-img
// info in the format the stored name implies, so a qcow2 named .vmdk, or
// anything but a qcow2 named .qcow2, fails the task with Proxmox's text; a
// .raw name takes any file as raw (a qcow2 included, sized as its bytes).
func TestDownloadChecksImportFormatByName(t *testing.T) {
	qcow := qcow2Image(10<<30, 0)
	hs := fileServer(t, map[string][]byte{"/q": qcow, "/v": vmdkImage(4 << 30), "/x": []byte("plain bytes")})
	_, c := newSim(t, Options{})
	for _, tc := range []struct {
		file, path, want string
		size             float64
	}{
		{"a.qcow2", "/q", "OK", 10 << 30},
		{"b.vmdk", "/v", "OK", 4 << 30},
		{"c.raw", "/q", "OK", float64(len(qcow))},
		{"d.vmdk", "/q", "failed to verify file: failed to query file information with qemu-img", 0},
		{"e.vmdk", "/x", "failed to verify file: failed to query file information with qemu-img", 0},
		{"f.qcow2", "/v", "failed to verify file: failed to query file information with qemu-img", 0},
	} {
		st := c.task("POST", "/nodes/pve1/storage/local/download-url", vals("content", "import", "filename", tc.file, "url", hs.URL+tc.path))
		if st != tc.want {
			t.Errorf("%s from %s: %q, want %q", tc.file, tc.path, st, tc.want)
			continue
		}
		if tc.want != "OK" {
			if r := c.do("GET", "/nodes/pve1/storage/local/content/"+url.PathEscape("local:import/"+tc.file), nil); r.Status != 500 {
				t.Errorf("%s stored after a failed check", tc.file)
			}
			continue
		}
		info := c.mustOK("GET", "/nodes/pve1/storage/local/content/"+url.PathEscape("local:import/"+tc.file), nil).obj(t)
		if info["size"] != tc.size {
			t.Errorf("%s: size %v, want %v", tc.file, info["size"], tc.size)
		}
	}
}

// download-url (and upload, through the same preparation) store a
// container template under its normalised name, as they do an ISO.
func TestDownloadedTemplateNamesAreNormalised(t *testing.T) {
	hs := fileServer(t, map[string][]byte{"/ct.tar.zst": []byte("tar")})
	srv, c := newSim(t, Options{})
	for _, tc := range []struct{ content, name, volid string }{
		{"vztmpl", "alpine 3.20+build~1.tar.zst", "local:vztmpl/alpine_3.20_build_1.tar.zst"},
		{"iso", "my disc+1.iso", "local:iso/my_disc_1.iso"},
	} {
		if st := c.task("POST", "/nodes/pve1/storage/local/download-url", vals("content", tc.content, "filename", tc.name, "url", hs.URL+"/ct.tar.zst")); st != "OK" {
			t.Fatalf("%s: %s", tc.name, st)
		}
		if vols := srv.Volumes("pve1", "local"); !slices.Contains(vols, tc.volid) {
			t.Errorf("%s: local holds %v, want %s", tc.name, vols, tc.volid)
		}
	}
}

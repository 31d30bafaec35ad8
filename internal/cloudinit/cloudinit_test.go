package cloudinit

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
)

func TestBuildISOReadsBackWithCloudInitNames(t *testing.T) {
	seed := Seed{UserData: "#cloud-config\npackages: [nginx]\n", Hostname: "web01"}
	var buf bytes.Buffer
	if err := BuildISO(&buf, seed); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seed.iso")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := file.OpenFromPath(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs, err := iso9660.Read(b, int64(buf.Len()), 0, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(strings.TrimRight(fs.Label(), " \x00"), VolumeLabel) {
		t.Fatalf("label %q", fs.Label())
	}
	entries, err := fs.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "meta-data,user-data" {
		t.Fatalf("files %v: cloud-init needs user-data and meta-data by these names", names)
	}
	ud, err := fs.ReadFile("user-data")
	if err != nil || string(ud) != seed.UserData {
		t.Fatalf("user-data %q %v", ud, err)
	}
	md, err := fs.ReadFile("meta-data")
	if err != nil || !strings.Contains(string(md), "instance-id: "+seed.InstanceID()) || !strings.Contains(string(md), "local-hostname: web01") {
		t.Fatalf("meta-data %q %v", md, err)
	}
}

func TestHashFollowsContent(t *testing.T) {
	a := Seed{UserData: "#cloud-config\n"}
	b := Seed{UserData: "#cloud-config\nruncmd: [true]\n"}
	c := Seed{UserData: "#cloud-config\n", Hostname: "x"}
	if a.Hash() == b.Hash() || a.Hash() == c.Hash() || a.InstanceID() == b.InstanceID() {
		t.Fatal("different content, same hash")
	}
	if a.Hash() != (Seed{UserData: "#cloud-config\n"}).Hash() {
		t.Fatal("hash not stable")
	}
	name := FileName(130, b)
	vmid, hash, ok := ParseFileName(name)
	if !ok || vmid != 130 || hash != b.Hash() {
		t.Fatalf("%s -> %d %s %v", name, vmid, hash, ok)
	}
	for _, bad := range []string{"cidata.iso", "proxmops-cidata-x-abc.iso", "proxmops-cidata-12-.iso", "proxmops-cidata-12-abc.img"} {
		if _, _, ok := ParseFileName(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestBuildISORefusesEmpty(t *testing.T) {
	if err := BuildISO(&bytes.Buffer{}, Seed{}); err == nil {
		t.Fatal("empty user-data accepted")
	}
}

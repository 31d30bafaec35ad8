package pvefields

import (
	"strings"
	"testing"
)

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"20G": 20 * GiB, "20GiB": 20 * GiB, "512M": 512 * MiB, "1T": TiB, "10240K": 10 * MiB, "1.5G": 1536 * MiB, "4096": 4096} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "-1G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if FormatSize(20*GiB) != "20G" || FormatSize(1536*MiB) != "1536M" {
		t.Fatal("FormatSize")
	}
}

func TestFileNames(t *testing.T) {
	tests := []struct{ url, override, format, want string }{
		{"https://cloud-images.example/jammy-server-cloudimg-amd64.img", "", "", "jammy-server-cloudimg-amd64.qcow2"},
		{"https://images.example/openwrt-x86-64-generic-ext4-combined.img", "", "raw", "openwrt-x86-64-generic-ext4-combined.raw"},
		{"http://127.0.0.1:8080/debian-12-genericcloud-amd64.qcow2", "", "", "debian-12-genericcloud-amd64.qcow2"},
		{"http://127.0.0.1/disk.raw?token=x", "", "", "disk.raw"},
		{"http://127.0.0.1/disk.VMDK", "", "", "disk.vmdk"},
		{"http://127.0.0.1/image", "", "", "image.qcow2"},
		{"http://127.0.0.1/image", "", "vmdk", "image.vmdk"},
		{"http://127.0.0.1/a.img", "mine.raw", "", "mine.raw"},
		{"http://127.0.0.1/a.img", "mine.qcow2", "raw", "mine.raw"},
	}
	for _, tt := range tests {
		got, err := ImportFileName(tt.url, tt.override, tt.format)
		if err != nil || got != tt.want {
			t.Errorf("importFileName(%s, %q, %q) = %s, %v; want %s", tt.url, tt.override, tt.format, got, err, tt.want)
		}
	}
	for _, u := range []string{"http://127.0.0.1/noble.img.xz", "http://127.0.0.1/disk.qcow2.gz", "http://127.0.0.1/d.raw.zst"} {
		if _, err := ImportFileName(u, "", ""); err == nil || !strings.Contains(err.Error(), "is compressed") {
			t.Errorf("importFileName(%s): %v", u, err)
		}
	}
	if got, _ := ISOFileName("http://127.0.0.1/x/debian-12-amd64-netinst.iso", "", "debian-12"); got != "debian-12-amd64-netinst.iso" {
		t.Errorf("iso name %s", got)
	}
	if got, _ := ISOFileName("http://127.0.0.1/download?id=3", "", "debian-12"); got != "download.iso" {
		t.Errorf("iso name %s", got)
	}
}

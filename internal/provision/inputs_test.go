package provision

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

// The hash covers every step and every byte of content; the record line
// round-trips and names what changed.
func TestInputChangesAreNamedFromTheRecord(t *testing.T) {
	base := sampleInputs()
	rec := base.Record()
	if !strings.HasPrefix(rec.Hash, "sha256:") || len(rec.Hash) != 71 {
		t.Fatalf("hash %q", rec.Hash)
	}
	parsed, ok := ParseLine(rec.Line())
	if !ok || parsed.Line() != rec.Line() {
		t.Fatalf("round trip: %q -> %+v", rec.Line(), parsed)
	}
	for _, tc := range []struct {
		name   string
		change func(in *Inputs)
		want   string
	}{
		{"nothing", func(*Inputs) {}, ""},
		{"file content", func(in *Inputs) { in.Files[0].Data = []byte("<h1>new</h1>\n") }, "files /var/www/html/index.html"},
		{"file mode", func(in *Inputs) { in.Files[0].Mode = 0o600 }, "files /var/www/html/index.html"},
		{"file added", func(in *Inputs) { in.Files = append(in.Files, File{Path: "/etc/motd", Mode: 0o644}) }, "files /etc/motd"},
		{"file removed", func(in *Inputs) { in.Files = nil }, "files 1 removed"},
		{"copied tree content", func(in *Inputs) { in.Copies[0].Tree[1].Data = []byte("#!/bin/sh\nexit 0\n") }, "copy /opt/cookbook"},
		{"copied tree mode", func(in *Inputs) { in.Copies[0].Tree[1].Mode = 0o644 }, "copy /opt/cookbook"},
		{"commands", func(in *Inputs) { in.Commands[1] = "echo again" }, "commands"},
		{"packages and commands", func(in *Inputs) { in.Packages = in.Packages[:1]; in.Commands = nil }, "packages, commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleInputs()
			tc.change(in)
			if got := in.Changes(parsed); got != tc.want {
				t.Fatalf("Changes = %q, want %q", got, tc.want)
			}
			if (in.Hash() == rec.Hash) != (tc.want == "") {
				t.Fatal("the hash does not follow the change")
			}
		})
	}
}

// Many files are recorded as one combined hash, keeping the line short.
func TestRecordOfManyFilesStaysShort(t *testing.T) {
	in := &Inputs{}
	for i := range 200 {
		in.Files = append(in.Files, File{Path: "/f/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)), Data: []byte{byte(i)}})
	}
	rec := in.Record()
	if len(rec.Line()) > 200 {
		t.Fatalf("line is %d bytes", len(rec.Line()))
	}
	old, _ := ParseLine(rec.Line())
	in.Files[5].Data = []byte("changed")
	if got := in.Changes(old); got != "files" {
		t.Fatalf("Changes = %q", got)
	}
}

// proxmops' line is split from the user's description and put back after
// it; the user's text keeps its own lines.
func TestDescriptionLine(t *testing.T) {
	rec := sampleInputs().Record()
	for _, user := range []string{"", "web server", "line one\n\nline two\n"} {
		joined := JoinDescription(user, rec)
		got, r, ok := SplitDescription(joined + "\n")
		if !ok || r.Hash != rec.Hash || got != strings.TrimRight(user, "\n") {
			t.Errorf("user %q: split %q %+v %v", user, got, r, ok)
		}
	}
	if got, _, ok := SplitDescription("proxmops-provisioned: by hand\nnotes"); ok || got != "proxmops-provisioned: by hand\nnotes" {
		t.Errorf("a line that is not a record is the user's: %q %v", got, ok)
	}
}

func TestFromManifest(t *testing.T) {
	p := &manifest.Provision{Packages: []string{"nginx"}, Commands: []string{"true"},
		Files: []manifest.ProvisionFile{{Path: "/etc/a", Content: "x", Mode: "0600"}, {Path: "/etc/b", Source: "b.txt", Data: []byte("from git")}},
		Copy:  []manifest.ProvisionCopy{{Source: "lib", Path: "/opt/lib", Tree: []manifest.TreeFile{}}}}
	in, err := FromManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	if in.Files[0].Mode != 0o600 || string(in.Files[0].Data) != "x" || in.Files[1].Mode != 0o644 || string(in.Files[1].Data) != "from git" {
		t.Fatalf("%+v", in.Files)
	}
	if in.Summary() != "1 package, 2 files, 1 copy (0 files), 1 command" {
		t.Fatalf("summary %q", in.Summary())
	}
	p.Files[1].Data = nil
	if _, err := FromManifest(p); err == nil || !strings.Contains(err.Error(), "were not read") {
		t.Fatalf("unread source: %v", err)
	}
}

// The longest record line, every part present and the item lists past
// their cap, is the room manifest validation keeps for it.
func TestTheLongestRecordLineIsTheRoomValidationKeeps(t *testing.T) {
	h := strings.Repeat("f", 64)
	items := make([]string, maxItems)
	for i := range items {
		items[i] = h[:shortLen]
	}
	r := Record{Hash: "sha256:" + h, Packages: h[:shortLen], Files: items, Copies: items, Commands: h[:shortLen]}
	if got := len(r.Line()); got != manifest.ProvisionRecordMax {
		t.Fatalf("longest line %d bytes, validation keeps %d", got, manifest.ProvisionRecordMax)
	}
	many := make([]string, maxItems+1)
	if got := len(capItems(many)[0]); got > shortLen+1 {
		t.Fatalf("capped list %d bytes", got)
	}
}

// Package packaging_test checks the install paths in this directory as a user
// meets them: a release archive laid out as .goreleaser.yaml makes it, served
// from a loopback file server to install.sh; the systemd unit through
// systemd-analyze; the container image's Dockerfile with the binary running
// as its user. The tests build one host binary and no other platforms.
package packaging_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testVersion is stamped into the binary the tests build, so that
// `proxmops version` proves which binary an install put in place.
const testVersion = "9.9.9-installtest"

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// hostBinary builds cmd/proxmops once per test run (static, version stamped).
func hostBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "proxmops-packaging-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "proxmops")
		// The flags of the UI's e2e build (web/e2e/daemon.ts): one compile
		// of the packages serves both.
		cmd := exec.Command("go", "build", "-o", builtBin,
			"-ldflags", "-s -w -X github.com/proxmops/proxmops/internal/buildinfo.Version="+testVersion,
			"./cmd/proxmops")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goreleaserConfig is the part of .goreleaser.yaml the tests follow.
type goreleaserConfig struct {
	Before struct {
		Hooks []string `yaml:"hooks"`
	} `yaml:"before"`
	Builds []struct {
		Goos   []string `yaml:"goos"`
		Goarch []string `yaml:"goarch"`
		Env    []string `yaml:"env"`
	} `yaml:"builds"`
	Archives []struct {
		NameTemplate string `yaml:"name_template"`
		Files        []any  `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	DockersV2 []struct {
		Dockerfile string   `yaml:"dockerfile"`
		Platforms  []string `yaml:"platforms"`
		ExtraFiles []string `yaml:"extra_files"`
		Images     []string `yaml:"images"`
	} `yaml:"dockers_v2"`
	Release struct {
		ExtraFiles []struct {
			Glob string `yaml:"glob"`
		} `yaml:"extra_files"`
	} `yaml:"release"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(c.Builds) != 1 || len(c.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: want one build and one archive, got %d and %d", len(c.Builds), len(c.Archives))
	}
	return c
}

// extrasDir runs packaging/extras.sh with the test's binary, as GoReleaser's
// before hook runs it with its own.
func extrasDir(t *testing.T, bin string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "extras")
	cmd := exec.Command("sh", filepath.Join(repoRoot(t), "packaging", "extras.sh"), out, bin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("extras.sh: %v\n%s", err, b)
	}
	return out
}

// archiveFiles resolves the archive's files list of .goreleaser.yaml to
// (path in the archive, file on disk) pairs, with build/extras standing for
// the directory extras.sh wrote.
func archiveFiles(t *testing.T, c goreleaserConfig, extras string) map[string]string {
	t.Helper()
	root := repoRoot(t)
	local := func(src string) string {
		if rest, ok := strings.CutPrefix(src, "build/extras/"); ok {
			return filepath.Join(extras, rest)
		}
		return filepath.Join(root, src)
	}
	files := map[string]string{}
	for _, f := range c.Archives[0].Files {
		var src, dst string
		strip := false
		switch v := f.(type) {
		case string:
			src = v
		case map[string]any:
			src, _ = v["src"].(string)
			dst, _ = v["dst"].(string)
			strip, _ = v["strip_parent"].(bool)
		default:
			t.Fatalf("archive file entry %v", f)
		}
		matches, err := filepath.Glob(local(src))
		if err != nil || len(matches) == 0 {
			t.Fatalf("archive file %s matches nothing (%v)", src, err)
		}
		for _, m := range matches {
			name := src
			if strings.ContainsAny(src, "*?[") || strip {
				name = filepath.Base(m)
			}
			if strip || dst != "" {
				name = filepath.Join(dst, filepath.Base(m))
			}
			files[filepath.ToSlash(filepath.Clean(name))] = m
		}
	}
	return files
}

// archiveName fills the archive's name template for this machine.
func archiveName(t *testing.T, c goreleaserConfig) string {
	t.Helper()
	r := strings.NewReplacer("{{ .ProjectName }}", "proxmops", "{{ .Os }}", runtime.GOOS, "{{ .Arch }}", runtime.GOARCH)
	name := r.Replace(c.Archives[0].NameTemplate)
	if strings.Contains(name, "{{") {
		t.Fatalf("archive name template %q uses more than the tests fill in", c.Archives[0].NameTemplate)
	}
	return name + ".tar.gz"
}

// writeTarGz writes the binary and the files to a .tar.gz, as GoReleaser does.
func writeTarGz(t *testing.T, path, bin string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Stored, not compressed: the test binary runs under -race, where
	// deflating the 40 MB binary took 33 s per archive (8 s at BestSpeed)
	// on a loaded 2-core machine, against 0.07 s stored. install.sh's
	// `tar -xzf` and the checksum checks read a stored gzip stream as
	// they read GoReleaser's compressed one.
	gz, err := gzip.NewWriterLevel(f, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	add := func(name, src string) {
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		hdr := &tar.Header{Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if _, err := io.Copy(tw, in); err != nil {
			t.Fatal(err)
		}
	}
	add("proxmops", bin)
	for name, src := range files {
		add(name, src)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// release lays out a release directory for this machine: the archive and
// checksums.txt, named and listed as .goreleaser.yaml names them. The
// archive is made once per run and copied into each test's directory (the
// tests tamper with their copy).
func release(t *testing.T) (dir, archive string) {
	t.Helper()
	c := readGoreleaser(t)
	if c.Checksum.Algorithm != "sha256" {
		t.Fatalf("checksums use %q; install.sh checks sha256", c.Checksum.Algorithm)
	}
	src := sharedArchive(t, c)
	dir = t.TempDir()
	archive = filepath.Base(src)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, archive), data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	// GoReleaser writes "<hex>  <name>" lines; another platform's line first
	// checks that the installer picks its own.
	list := fmt.Sprintf("%s  proxmops_plan9_mips.tar.gz\n%s  %s\n", strings.Repeat("0", 64), hex.EncodeToString(h[:]), archive)
	if err := os.WriteFile(filepath.Join(dir, c.Checksum.NameTemplate), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, archive
}

var (
	archiveOnce sync.Once
	archivePath string // set once the archive is complete
)

// sharedArchive writes the release archive of the host binary once per run,
// in buildDir.
func sharedArchive(t *testing.T, c goreleaserConfig) string {
	t.Helper()
	bin := hostBinary(t)
	archiveOnce.Do(func() {
		path := filepath.Join(buildDir, archiveName(t, c))
		writeTarGz(t, path, bin, archiveFiles(t, c, extrasDir(t, bin)))
		archivePath = path // only reached when nothing above failed
	})
	if archivePath == "" {
		t.Fatal("the release archive could not be made (see the first test that needed it)")
	}
	return archivePath
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func TestGoreleaserBuildsStaticLinuxAndDarwinForAmd64AndArm64(t *testing.T) {
	c := readGoreleaser(t)
	b := c.Builds[0]
	if strings.Join(b.Goos, ",") != "linux,darwin" || strings.Join(b.Goarch, ",") != "amd64,arm64" {
		t.Errorf("platforms %v x %v", b.Goos, b.Goarch)
	}
	if !contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v lacks CGO_ENABLED=0 (static binaries)", b.Env)
	}
	// The UI is embedded only when it is built before the binaries.
	if !contains(c.Before.Hooks, "make web") {
		t.Errorf("before hooks %v do not build the UI", c.Before.Hooks)
	}
	if c.Checksum.NameTemplate != "checksums.txt" {
		t.Errorf("checksum file %q, install.sh fetches checksums.txt", c.Checksum.NameTemplate)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// listFiles returns the regular files under dir, relative, sorted by walk.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

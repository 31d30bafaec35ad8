package packaging_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/proxmops/proxmops/internal/pgtest"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, COPY, ...
	args string
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	return out
}

func dockerfileArgs(ins []instruction, cmd string) []string {
	var out []string
	for _, i := range ins {
		if i.cmd == cmd {
			out = append(out, i.args)
		}
	}
	return out
}

// dockerEnv parses the ENV instructions (KEY=VALUE form).
func dockerEnv(t *testing.T, ins []instruction) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, args := range dockerfileArgs(ins, "ENV") {
		for _, kv := range strings.Fields(args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ENV %q: use KEY=VALUE", args)
			}
			env[k] = v
		}
	}
	return env
}

func TestDockerfileBuildContextHasEverythingItCopies(t *testing.T) {
	ins := readDockerfile(t)
	if from := dockerfileArgs(ins, "FROM"); len(from) != 1 || (from[0] != "scratch" && !strings.Contains(from[0], "distroless/static")) {
		t.Fatalf("FROM %v: want scratch or distroless static, one stage", from)
	}
	c := readGoreleaser(t)
	if len(c.DockersV2) != 1 || c.DockersV2[0].Dockerfile != "Dockerfile" {
		t.Fatalf(".goreleaser.yaml dockers_v2: %+v", c.DockersV2)
	}
	d := c.DockersV2[0]
	// The context GoReleaser lays out: extra files at their paths, the
	// binary at <platform>/proxmops.
	extras := extrasDir(t, hostBinary(t))
	present := map[string]bool{}
	for _, f := range d.ExtraFiles {
		src := filepath.Join(repoRoot(t), f)
		if rest, ok := strings.CutPrefix(f, "build/extras/"); ok {
			src = filepath.Join(extras, rest)
		}
		if _, err := os.Stat(src); err != nil {
			t.Errorf("extra file %s: %v", f, err)
		}
		present[f] = true
	}
	for _, p := range d.Platforms {
		present[p+"/proxmops"] = true
	}
	for _, args := range dockerfileArgs(ins, "COPY") {
		fields := strings.Fields(args)
		var srcs []string
		for _, f := range fields[:len(fields)-1] {
			if !strings.HasPrefix(f, "--") {
				srcs = append(srcs, f)
			}
		}
		for _, src := range srcs {
			for _, p := range d.Platforms {
				s := strings.ReplaceAll(src, "$TARGETPLATFORM", p)
				ok := present[s]
				for f := range present {
					ok = ok || strings.HasPrefix(f, strings.TrimSuffix(s, "/")+"/")
				}
				if !ok {
					t.Errorf("COPY %s: %s is not in the build context for %s", args, s, p)
				}
			}
		}
	}
}

func TestDockerfileRunsAsNonRootWithStateInTheVolume(t *testing.T) {
	ins := readDockerfile(t)
	env := dockerEnv(t, ins)
	// The database's default place is the working directory, /data: an
	// image that named it would refuse PROXMOPS_SERVER_DATABASE (PostgreSQL,
	// docs/ha.md's Compose recipe) as a second database.
	if v, ok := env["PROXMOPS_SERVER_DATABASEPATH"]; ok {
		t.Errorf("the image sets PROXMOPS_SERVER_DATABASEPATH=%q: a replica given PROXMOPS_SERVER_DATABASE would refuse to start", v)
	}
	if v := dockerfileArgs(ins, "VOLUME"); len(v) != 1 || !strings.Contains(v[0], `"/data"`) {
		t.Errorf("VOLUME %v, want /data", v)
	}
	uid, gid := dockerUser(t, ins)
	if uid == 0 {
		t.Fatal("USER is root")
	}
	passwd, err := os.ReadFile(filepath.Join(repoRoot(t), "packaging/docker/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), ":x:"+strconv.Itoa(uid)+":"+strconv.Itoa(gid)+":") {
		t.Errorf("packaging/docker/passwd has no user %d:%d", uid, gid)
	}
	chown := "--chown=" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
	owned := false
	for _, args := range dockerfileArgs(ins, "COPY") {
		owned = owned || (strings.Contains(args, chown) && strings.HasSuffix(args, " /data/"))
	}
	if !owned {
		t.Error("no COPY makes /data belong to the image's user: a fresh volume would not be writable")
	}
	hc := dockerfileArgs(ins, "HEALTHCHECK")
	if len(hc) != 1 || !strings.Contains(hc[0], `CMD ["/usr/local/bin/proxmops", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %v", hc)
	}
}

// dockerUser returns the numeric USER uid:gid.
func dockerUser(t *testing.T, ins []instruction) (int, int) {
	t.Helper()
	u := dockerfileArgs(ins, "USER")
	if len(u) != 1 {
		t.Fatalf("USER %v: want exactly one", u)
	}
	us, gs, _ := strings.Cut(u[0], ":")
	uid, err1 := strconv.Atoi(us)
	gid, err2 := strconv.Atoi(gs)
	if err1 != nil || err2 != nil {
		t.Fatalf("USER %q: want numeric uid:gid (scratch has no user database lookups at build)", u[0])
	}
	return uid, gid
}

// The image's process, as far as it can run without Docker: the binary as
// the image's user, with the image's environment (its /data in a temporary
// directory, its port on loopback), answering the image's health check, its
// state written into the volume, and stopping cleanly on SIGTERM.
func TestImageProcessServesAsItsUserAndStopsOnSIGTERM(t *testing.T) {
	p := startImageProcess(t, nil)
	p.waitHealthy(t)
	for _, f := range []string{"proxmops.db", "proxmops.db.key"} {
		st, err := os.Stat(filepath.Join(p.vol, f))
		if err != nil {
			t.Fatalf("state not in the volume: %v", err)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && p.cred != nil && int(sys.Uid) != p.uid {
			t.Errorf("%s belongs to uid %d, want %d", f, sys.Uid, p.uid)
		}
	}
	p.stop(t)
}

// The Compose recipe of docs/ha.md, as far as it runs without Docker: the
// image's environment plus the replica's `environment:` from the recipe (its
// database host pointed at a test PostgreSQL, ${PROXMOPS_ENCRYPTION_KEY} made
// as the recipe says), serving on PostgreSQL with nothing in the volume.
func TestHAComposeRecipeStartsTheImageOnPostgreSQL(t *testing.T) {
	db := pgtest.Database(t)
	env := composeReplicaEnv(t, "proxmops-a")
	if _, ok := env["PROXMOPS_SERVER_DATABASE"]; !ok {
		t.Fatalf("the recipe's replica has no PROXMOPS_SERVER_DATABASE: %v", env)
	}
	key, err := exec.Command("sh", "-c", "head -c 32 /dev/urandom | base64").Output()
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{}
	for k, v := range env {
		switch {
		case k == "PROXMOPS_SERVER_DATABASE":
			v = db
		case v == "${PROXMOPS_ENCRYPTION_KEY}":
			v = strings.TrimSpace(string(key))
		case k == "PROXMOPS_HA_ADVERTISEURL":
			v = "http://127.0.0.1:1"
		}
		extra[k] = v
	}
	p := startImageProcess(t, extra)
	p.waitHealthy(t)
	if _, err := os.Stat(filepath.Join(p.vol, "proxmops.db")); err == nil {
		t.Error("with PostgreSQL the replica still made a SQLite database in the volume")
	}
	p.stop(t)
}

// composeReplicaEnv reads the Compose block of docs/ha.md and returns the
// named service's environment (YAML anchors and merges resolved).
func composeReplicaEnv(t *testing.T, service string) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "ha.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, part := range strings.Split(string(doc), "```yaml\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if strings.HasPrefix(body, "services:") {
			block = body
		}
	}
	if block == "" {
		t.Fatal("docs/ha.md has no Compose block (```yaml services: ...)")
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(block), &compose); err != nil {
		t.Fatalf("docs/ha.md's Compose block: %v", err)
	}
	svc, ok := compose.Services[service]
	if !ok {
		t.Fatalf("docs/ha.md's Compose block has no service %s", service)
	}
	return svc.Environment
}

// imageProcess is `proxmops serve` run as the image runs it.
type imageProcess struct {
	bin, vol string
	env      []string
	cred     *syscall.Credential
	uid      int
	cmd      *exec.Cmd
	done     chan error
	logs     *strings.Builder
}

// startImageProcess starts the binary with the image's user, environment
// and volume (a temporary directory), plus extra variables.
func startImageProcess(t *testing.T, extra map[string]string) *imageProcess {
	t.Helper()
	ins := readDockerfile(t)
	uid, gid := dockerUser(t, ins)
	p := &imageProcess{uid: uid, done: make(chan error, 1), logs: &strings.Builder{}}
	if os.Getuid() == 0 {
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	} else {
		t.Logf("not root: running as uid %d instead of the image's %d", os.Getuid(), uid)
	}
	dir := openDir(t)
	p.bin = filepath.Join(dir, "proxmops")
	data, err := os.ReadFile(hostBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p.vol = filepath.Join(dir, "data")
	if err := os.Mkdir(p.vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if p.cred != nil {
		if err := os.Chown(p.vol, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p.env = []string{"PATH=/usr/bin:/bin", "PROXMOPS_CONFIG="}
	for k, v := range dockerEnv(t, ins) {
		p.env = append(p.env, k+"="+strings.ReplaceAll(v, "/data", p.vol))
	}
	for k, v := range extra {
		p.env = append(p.env, k+"="+v)
	}
	p.env = append(p.env, "PROXMOPS_SERVER_ADDR="+freeLoopbackAddr(t))
	workdir := dockerfileArgs(ins, "WORKDIR")
	if len(workdir) != 1 || workdir[0] != "/data" {
		t.Fatalf("WORKDIR %v, want /data (the state's default place is the working directory)", workdir)
	}
	p.cmd = exec.Command(p.bin, "serve") // CMD ["serve"]
	p.cmd.Env, p.cmd.Dir = p.env, p.vol
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// waitHealthy runs the image's health check until it passes.
func (p *imageProcess) waitHealthy(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-p.done:
			t.Fatalf("serve ended before it was healthy (%v); its log:\n%s", err, p.logs)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		hc := exec.CommandContext(ctx, p.bin, "healthcheck")
		hc.Env = p.env
		hc.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		healthy := hc.Run() == nil
		cancel()
		if healthy {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	t.Fatalf("the health check never passed; serve's log:\n%s", p.logs)
}

// stop sends SIGTERM and expects a clean exit.
func (p *imageProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, p.logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60 s of SIGTERM\n%s", p.logs)
	}
}

// openDir is a temporary directory other users may enter (the image's user
// must reach the binary), removed at the end of the test.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "proxmops-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

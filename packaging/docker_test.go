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
	if env["PROXMOPS_SERVER_DATABASEPATH"] != "/data/proxmops.db" {
		t.Errorf("PROXMOPS_SERVER_DATABASEPATH=%q, want /data/proxmops.db", env["PROXMOPS_SERVER_DATABASEPATH"])
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
	ins := readDockerfile(t)
	uid, gid := dockerUser(t, ins)
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	} else {
		t.Logf("not root: running as uid %d instead of the image's %d", os.Getuid(), uid)
	}
	dir := openDir(t)
	bin := filepath.Join(dir, "proxmops")
	data, err := os.ReadFile(hostBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(dir, "data")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(vol, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "PROXMOPS_CONFIG="}
	for k, v := range dockerEnv(t, ins) {
		env = append(env, k+"="+strings.ReplaceAll(v, "/data", vol))
	}
	env = append(env, "PROXMOPS_SERVER_ADDR="+freeLoopbackAddr(t))
	cmdArgs := []string{"serve"} // CMD ["serve"]
	serve := exec.Command(bin, cmdArgs...)
	serve.Env, serve.Dir = env, vol
	serve.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	logs := &strings.Builder{}
	serve.Stdout, serve.Stderr = io.Discard, logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	defer serve.Process.Kill()

	healthy := false
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline) && !healthy; {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		hc := exec.CommandContext(ctx, bin, "healthcheck")
		hc.Env = env
		hc.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		healthy = hc.Run() == nil
		cancel()
		if !healthy {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if !healthy {
		serve.Process.Kill()
		<-done
		t.Fatalf("the health check never passed; serve's log:\n%s", logs)
	}
	for _, f := range []string{"proxmops.db", "proxmops.db.key"} {
		st, err := os.Stat(filepath.Join(vol, f))
		if err != nil {
			t.Fatalf("state not in the volume: %v", err)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && cred != nil && int(sys.Uid) != uid {
			t.Errorf("%s belongs to uid %d, want %d", f, sys.Uid, uid)
		}
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60 s of SIGTERM\n%s", logs)
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

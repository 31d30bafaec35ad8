// Package demo runs `proxmops demo`: a simulated three-node Proxmox VE
// cluster, a loopback file server for the cloud images and ISOs the
// examples download, a local Git repository made from the examples (their
// URLs pointed at that file server, checksums recomputed), and the daemon
// against both, all in one process.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/proxmops/proxmops/examples"
	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/controller"
	"github.com/proxmops/proxmops/internal/daemon"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/pvesim"
)

// Admin is the demo's pre-created account.
const Admin = "admin"

const simTokenID = "root@pam!proxmops"

// Options configure Run.
type Options struct {
	// Addr is where the UI and API listen (default 127.0.0.1:8080).
	Addr string
	// Dir keeps the demo's state (Git repository, database, simulated
	// cluster); "" uses a temporary directory removed at the end.
	Dir string
	// TaskSpeed scales the simulator's task durations (default 1: realistic).
	TaskSpeed float64
	// Interval between reconcile passes (default 5s).
	Interval time.Duration
	// Out receives the banner (address, login, repository); Log the log.
	Out io.Writer
	Log io.Writer
	// LogLevel is debug, info, warn or error (default info).
	LogLevel string
	// UI is the built web UI (nil: the server's notice).
	UI fs.FS
	// GuestSSHPort is the SSH port of the simulated guests with a static
	// 127.0.0.0/8 address (pvesim.Options.GuestSSHPort); their files are
	// kept under Dir/guests. The examples that declare provision are given
	// such an address and this port. 0 picks a free port (kept in Dir).
	GuestSSHPort int
	// Clusters is the number of simulated clusters (default 1). With more,
	// the repository has one directory per cluster, clusters/lab-1 (the
	// examples), clusters/lab-2, ..., and the daemon follows each with its
	// own simulator (the clusters list of the configuration).
	Clusters int
	// Started is called once everything is up.
	Started func(Info)
}

// Info describes a running demo.
type Info struct {
	URL        string // the UI and API
	Username   string
	Password   string
	RepoDir    string // the Git repository to commit into
	ClusterURL string // the simulated Proxmox VE API (of lab-1 with several clusters)
	// Clusters names each simulated cluster's API URL, with several.
	Clusters []ClusterInfo
	// Prefix is the examples' directory in the repository ("" or "clusters/lab-1/").
	Prefix string
	// GuestSSHPort and GuestRoot: the guests' SSH port and files (0, "" when off).
	GuestSSHPort int
	GuestRoot    string
}

// Run starts everything and blocks until ctx ends, then stops it all.
func Run(ctx context.Context, o Options) (err error) {
	o.setDefaults()
	dir, removeDir, err := workDir(o.Dir)
	if err != nil {
		return err
	}
	defer removeDir()

	// Listen first, so a busy address fails before anything else starts.
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose another with --addr)", o.Addr, err)
	}
	defer ln.Close()

	files, err := newFileServer()
	if err != nil {
		return err
	}
	defer files.close()

	sshPort := o.GuestSSHPort
	if sshPort == 0 {
		if sshPort, err = guestSSHPort(dir); err != nil {
			return err
		}
	}
	repoDir, prefix := repoLayout(dir, o.Clusters)
	if err := prepareRepo(repoDir, files, sshPort, prefix, o.Clusters); err != nil {
		return err
	}

	secret, err := persistentSecret(filepath.Join(dir, "sim-token"))
	if err != nil {
		return err
	}
	sim, simState, err := startSim(dir, secret, sshPort, o.TaskSpeed)
	if err != nil {
		return err
	}
	defer func() {
		if serr := sim.SaveState(simState); serr != nil && err == nil {
			err = serr
		}
		sim.Close()
	}()
	extra, err := startExtraClusters(dir, o.Clusters, secret, o.TaskSpeed)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stopExtraClusters(extra); serr != nil && err == nil {
			err = serr
		}
	}()

	password, err := persistentSecret(filepath.Join(dir, "admin-password"))
	if err != nil {
		return err
	}
	restoreEnv, err := provideSecrets(dir)
	if err != nil {
		return err
	}
	defer restoreEnv()

	cfg := daemonConfig(o, dir, repoDir, ln.Addr().String(), sim, extra, secret)
	logger, ring, err := daemon.NewLogger(cfg.Log, o.Log)
	if err != nil {
		return err
	}
	info := Info{URL: "http://" + ln.Addr().String(), Username: Admin, Password: password,
		RepoDir: repoDir, ClusterURL: sim.APIURL(), GuestSSHPort: o.GuestSSHPort, GuestRoot: sim.GuestRootDir(), Prefix: prefix}
	if o.Clusters > 1 {
		for _, e := range cfg.Clusters {
			info.Clusters = append(info.Clusters, ClusterInfo{Name: e.Name, URL: e.Endpoint, Path: e.Path})
		}
	}
	return daemon.Run(ctx, daemon.Options{
		Config: cfg, Logger: logger, Logs: ring, UI: o.UI, Listener: ln,
		SetupOutput: io.Discard,
		Prepare: func(ctx context.Context, st *store.Store) error {
			return ensureAdmin(ctx, st, password)
		},
		Controller: func(co *controller.Options) {
			co.MinPassGap = 500 * time.Millisecond
			co.ShutdownGrace = 10 * time.Second // Ctrl-C should not keep a person waiting
		},
		Started: func(net.Addr) {
			printBanner(o.Out, info)
			if o.Started != nil {
				o.Started(info)
			}
		},
	})
}

// setDefaults fills the options left zero.
func (o *Options) setDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.TaskSpeed == 0 {
		o.TaskSpeed = 1
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Clusters < 1 {
		o.Clusters = 1
	}
}

// workDir returns the demo's directory as an absolute path: dir, created if
// missing, or a new temporary one that remove deletes.
func workDir(dir string) (abs string, remove func(), err error) {
	remove = func() {}
	if dir == "" {
		dir, err = os.MkdirTemp("", "proxmops-demo-")
		if err != nil {
			return "", nil, err
		}
		tmp := dir
		remove = func() { os.RemoveAll(tmp) }
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	abs, err = filepath.Abs(dir)
	if err != nil {
		remove()
		return "", nil, err
	}
	return abs, remove, nil
}

// repoLayout returns the Git repository's directory and the examples'
// prefix in it: the examples at the root for one cluster, under
// clusters/lab-1/ in another repository for several.
func repoLayout(dir string, clusters int) (repoDir, prefix string) {
	if clusters > 1 {
		// Another layout: a kept single-cluster repository stays as it is.
		return filepath.Join(dir, "repo-clusters"), "clusters/" + clusterName(1) + "/"
	}
	return filepath.Join(dir, "repo"), ""
}

// startSim starts the first simulated cluster from its state kept in dir
// (cluster.json, returned for saving at the end), or as a new cluster with
// the objects its admin made by hand before proxmops.
func startSim(dir, secret string, sshPort int, taskSpeed float64) (*pvesim.Server, string, error) {
	sim := pvesim.New(pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: secret,
		TaskSpeed: taskSpeed, Seed: time.Now().UnixNano(),
		// Proxmox's status lag of /cluster/resources, independent of the task speed.
		StatusInterval: pvesim.DefaultStatusInterval,
		// Guests that declare provision get a real SSH server (commands
		// confined to their tree under dir/guests).
		GuestSSHPort: sshPort, GuestRoot: filepath.Join(dir, "guests")})
	simState := filepath.Join(dir, "cluster.json")
	if err := sim.LoadState(simState); errors.Is(err, fs.ErrNotExist) {
		if err := addHandMade(sim); err != nil {
			return nil, "", fmt.Errorf("simulated cluster: %w", err)
		}
	} else if err != nil {
		return nil, "", fmt.Errorf("simulated cluster state: %w", err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, "", err
	}
	return sim, simState, nil
}

// daemonConfig is the daemon's configuration for the demo: the simulated
// clusters, the local repository followed with prune on, the database and
// Git cache in dir.
func daemonConfig(o Options, dir, repoDir, addr string, sim *pvesim.Server, extra []*extraCluster, secret string) *config.Config {
	cfg := config.Defaults()
	if o.Clusters > 1 {
		cfg.Clusters = clustersConfig(sim, extra, secret)
	} else {
		cfg.Cluster = config.Cluster{Endpoint: sim.APIURL(), TokenID: simTokenID, TokenSecret: secret}
	}
	cfg.Source.RepoURL = "file://" + filepath.ToSlash(repoDir)
	cfg.Source.Revision = "main"
	cfg.Source.CacheDir = filepath.Join(dir, "git-cache")
	cfg.Reconcile.Interval = o.Interval
	cfg.Reconcile.Prune = true
	cfg.Server.Addr = addr
	cfg.Server.DatabasePath = filepath.Join(dir, "proxmops.db")
	if o.LogLevel != "" {
		cfg.Log.Level = o.LogLevel
	}
	return cfg
}

// exampleSecrets are the environment variables the examples read passwords
// from (passwordFrom: {env: ...}).
var exampleSecrets = []string{"K3S_CONSOLE_PASSWORD", "MEDIA_ROOT_PASSWORD"}

// provideSecrets sets each of exampleSecrets the user has not set to a
// generated value kept in the demo directory (so a rerun with --dir keeps
// it), as a user would export them before starting the daemon. It returns
// a function that restores the environment.
func provideSecrets(dir string) (restore func(), err error) {
	var set []string
	restore = func() {
		for _, name := range set {
			os.Unsetenv(name)
		}
	}
	for _, name := range exampleSecrets {
		if _, ok := os.LookupEnv(name); ok {
			continue
		}
		value, err := persistentSecret(filepath.Join(dir, "secret-"+strings.ToLower(name)))
		if err != nil {
			restore()
			return nil, err
		}
		if err := os.Setenv(name, value); err != nil {
			restore()
			return nil, err
		}
		set = append(set, name)
	}
	return restore, nil
}

// handMadeTemplate is the template web01 clones: not declared in the
// examples, made by hand on the cluster, as a person's own golden image.
var handMadeTemplate = pvesim.GuestSpec{VMID: 9100, Node: "pve2", Config: map[string]string{
	"name":        "guix-homelab-template",
	"template":    "1",
	"ostype":      "l26",
	"cores":       "2",
	"memory":      "2048",
	"scsihw":      "virtio-scsi-single",
	"scsi0":       "local-lvm:base-9100-disk-0,size=8G",
	"net0":        "virtio=BC:24:11:91:00:01,bridge=vmbr0",
	"boot":        "order=scsi0",
	"description": "Guix System, made by hand",
}}

// addHandMade puts on a new simulated cluster what the examples expect to
// find there without declaring it.
func addHandMade(sim *pvesim.Server) error {
	return sim.AddGuest(handMadeTemplate)
}

// passwordParams hash the admin's password (tests make them cheaper).
var passwordParams = auth.DefaultParams

// ensureAdmin creates the demo's admin, or resets its password on a rerun.
func ensureAdmin(ctx context.Context, st *store.Store, password string) error {
	h, err := auth.NewHasher(passwordParams, 1)
	if err != nil {
		return err
	}
	hash, err := h.Hash(ctx, password)
	if err != nil {
		return err
	}
	if _, err := st.UserByName(ctx, Admin); err == nil {
		return st.SetPassword(ctx, Admin, hash)
	}
	_, err = st.CreateUser(ctx, Admin, hash, api.RoleAdmin)
	return err
}

// persistentSecret reads a secret kept in path, or makes and keeps one.
func persistentSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 12 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 12)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	s := base64.RawURLEncoding.EncodeToString(buf)
	return s, os.WriteFile(path, []byte(s+"\n"), 0o600)
}

// prepareRepo makes the Git repository from the examples, unless an
// earlier run of the demo left one (with the user's commits) in dir.
func prepareRepo(dir string, files *fileServer, sshPort int, prefix string, clusters int) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		// Keep the user's repository, but point its URLs at this run's
		// file server (its port changes between runs) and its guests at
		// this run's guest SSH port.
		return rewriteExisting(dir, files, sshPort)
	}
	if err := fs.WalkDir(examples.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := examples.FS.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".yaml") {
			data = provisionRewrite(files.rewrite(data), sshPort)
		}
		dst := filepath.Join(dir, filepath.FromSlash(prefix+p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	}); err != nil {
		return fmt.Errorf("copy examples: %w", err)
	}
	if err := writeExtraManifests(dir, clusters); err != nil {
		return err
	}
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return err
	}
	// A committer identity, so `git commit` works in the demo repository
	// on a machine without a global Git configuration.
	gc, err := repo.Config()
	if err != nil {
		return err
	}
	gc.User.Name, gc.User.Email = "proxmops demo", "demo@proxmops.invalid"
	if err := repo.SetConfig(gc); err != nil {
		return err
	}
	return commitAll(repo, "examples: the demo home lab")
}

// rewriteExisting updates the file server URLs of a kept repository and
// commits when they changed.
func rewriteExisting(dir string, files *fileServer, sshPort int) error {
	changed := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := provisionRewrite(files.rewrite(data), sshPort)
		if string(out) != string(data) {
			changed = true
			return os.WriteFile(p, out, 0o644)
		}
		return nil
	})
	if err != nil || !changed {
		return err
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	return commitAll(repo, "demo: point downloads at this run's file server")
}

func commitAll(repo *git.Repository, msg string) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return err
	}
	_, err = wt.Commit(msg, &git.CommitOptions{
		Author: &object.Signature{Name: "proxmops demo", Email: "demo@proxmops.invalid", When: time.Now()},
	})
	return err
}

func printBanner(w io.Writer, in Info) {
	fmt.Fprintf(w, `
proxmops demo is running
  UI:        %s
  username:  %s
  password:  %s

  simulated Proxmox VE cluster (pve1, pve2, pve3): %s
  Git repository the daemon watches:             %s
%s
Make a change and watch the cluster follow within seconds:
  cd %s && sed -i 's/cores: 2/cores: 4/' %svms/app-01.yaml && git commit -qam "app-01: 4 cores"

Press Ctrl-C to stop.

`, in.URL, in.Username, in.Password, in.ClusterURL, in.RepoDir, clusterLines(in.Clusters), in.RepoDir, in.Prefix)
	if in.GuestSSHPort > 0 {
		fmt.Fprintf(w, "Guests with a 127.x.y.z address serve SSH on port %d; their files are in %s\n\n", in.GuestSSHPort, in.GuestRoot)
	}
}

// ClusterInfo is one simulated cluster of a demo with several.
type ClusterInfo struct {
	Name, URL, Path string
}

func clusterLines(cs []ClusterInfo) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  cluster %-8s %s follows %s/\n", c.Name, c.URL, c.Path)
	}
	return b.String()
}

// Package check is `proxmops check`, the settings page's "Test connection"
// and GET /api/v1/check: a read-only look at a cluster and a Git source
// that says, line by line, whether proxmops and the cluster agree (TLS,
// versions, the token's privileges for the current manifests, the nodes,
// storages, bridges and SDN zones the manifests name, clocks, HA and
// pools), each line OK, WARN or FAIL with what to do. It only ever sends
// GET requests.
package check

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/source"
)

// Options are what one check run looks at.
type Options struct {
	// Config is the configuration of one cluster (config.ForCluster for
	// an entry of a clusters list): its cluster section and its source.
	Config *config.Config
	// Name is the cluster's name in a clusters list ("" for the single
	// cluster section); the fixes name the configuration keys under it.
	Name string
	// Sync reads the source; nil reads it with source.New.
	Sync func(ctx context.Context, s config.Source) (*source.Result, error)
	// Secrets resolves the manifests' secret references (nil: files and
	// environment, as the engine does).
	Secrets engine.SecretReader
	// AdjustClient changes the Proxmox client's settings (tests, metrics).
	AdjustClient func(*pve.Config)
	// Now is the local clock the nodes' clocks are compared with.
	Now func() time.Time
	// Exercise, when set, runs the life of throwaway guests on the
	// cluster after the read-only checks (exercise.go): it writes.
	Exercise *ExerciseOptions
}

// MaxClockSkew is the difference between proxmops's clock and a node's
// above which check warns: task times, snapshot names and the history then
// disagree by more than a few seconds.
const MaxClockSkew = 5 * time.Second

// report collects the lines of one run.
type report struct{ checks []api.Check }

func (r *report) add(level api.CheckLevel, name, msg, fix string) {
	r.checks = append(r.checks, api.Check{Name: name, OK: level != api.CheckFail, Level: level, Message: msg, Fix: fix})
}
func (r *report) ok(name, msg string)        { r.add(api.CheckOK, name, msg, "") }
func (r *report) warn(name, msg, fix string) { r.add(api.CheckWarn, name, msg, fix) }
func (r *report) fail(name, msg, fix string) { r.add(api.CheckFail, name, msg, fix) }

// Result is the report of a run: OK unless a line is FAIL.
func (r *report) result() api.TestResult {
	res := api.TestResult{OK: true, Checks: r.checks}
	if res.Checks == nil {
		res.Checks = []api.Check{}
	}
	for _, c := range r.checks {
		res.OK = res.OK && c.OK
	}
	return res
}

// Run checks one cluster and its source. It never writes to either.
func Run(ctx context.Context, o Options) api.TestResult {
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &report{}
	// The repository first: what the cluster must offer depends on it.
	src := readSource(ctx, o)
	if client := r.connect(ctx, o); client != nil {
		defer client.Close()
		c := &clusterCheck{r: r, client: client, o: o, desired: src.desired}
		c.run(ctx)
	}
	src.report(r)
	return r.result()
}

// key names a configuration key of the checked cluster.
func (o Options) key(k string) string {
	if o.Name == "" || o.Name == config.DefaultClusterName {
		return "cluster." + k
	}
	return "clusters[" + o.Name + "]." + k
}

// sourceCheck is what reading the repository found.
type sourceCheck struct {
	desired *engine.Desired // nil when the manifests could not be read
	msg     string
	err     error
}

func readSource(ctx context.Context, o Options) sourceCheck {
	s := o.Config.Source
	if s.RepoURL == "" {
		return sourceCheck{err: errors.New("no repository URL (source.repoURL) is set")}
	}
	sync := o.Sync
	if sync == nil {
		sync = func(ctx context.Context, s config.Source) (*source.Result, error) {
			syncer, err := source.New(source.FromConfig(s))
			if err != nil {
				return nil, err
			}
			return syncer.Sync(ctx)
		}
	}
	res, err := sync(ctx, s)
	if err != nil {
		return sourceCheck{err: err}
	}
	set, err := manifest.LoadPath(res.Dir)
	if err != nil {
		return sourceCheck{err: fmt.Errorf("reachable at %s, but %w", res.Commit.Short(), err)}
	}
	counts := set.Counts()
	kinds := make([]string, 0, len(counts))
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	desc := "no manifests"
	if len(kinds) > 0 {
		desc = strings.Join(kinds, ", ")
	}
	at := "commit " + res.Commit.Short()
	if res.Local {
		at = "local directory " + res.Dir
	} else if subj := res.Commit.Subject(); subj != "" {
		at += " (" + subj + ")"
	}
	return sourceCheck{desired: engine.DesiredFromSet(set, o.Secrets), msg: fmt.Sprintf("%s: %s, all valid", at, desc)}
}

func (s sourceCheck) report(r *report) {
	if s.err != nil {
		r.fail("source: repository", s.err.Error(), "check source.repoURL, source.revision, source.path and the credentials; `proxmops validate DIR` names each invalid field")
		return
	}
	r.ok("source: repository", s.msg)
}

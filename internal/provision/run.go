package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"
)

const osCreateTrunc = os.O_WRONLY | os.O_CREATE | os.O_TRUNC

func fileMode(m uint32) os.FileMode { return os.FileMode(m) & os.ModePerm }

// Runner applies Inputs to guests over SSH.
type Runner struct {
	Keys *Keys
	// ConnectWait is how long a guest's SSH server may take to come up
	// after a start (default 3 minutes).
	ConnectWait time.Duration
	// TailLines is how many last lines of output a result keeps (default 20).
	TailLines int
	// Fence, when set, runs each step that changes the guest (the package
	// installation, each file, each copy, each command) and returns its
	// error. Among replicas it is the leader's (leader.Guard.Do): a step
	// starts only while the term of ctx leads, and the next term begins
	// after the step ended, so a leader that lost its term runs no more.
	Fence func(ctx context.Context, step func() error) error
}

// fenced runs step under r.Fence, if any.
func (r *Runner) fenced(ctx context.Context, step func() error) error {
	if r.Fence == nil {
		return step()
	}
	return r.Fence(ctx, step)
}

// NewRunner returns a runner with the given keys and default timings.
func NewRunner(keys *Keys) *Runner { return &Runner{Keys: keys} }

func (r *Runner) tailLines() int {
	if r.TailLines > 0 {
		return r.TailLines
	}
	return 20
}

// tailBytes bounds the output kept per command.
func (r *Runner) tailBytes() int { return 64 << 10 }

// Outcome is a successful run.
type Outcome struct {
	Duration time.Duration
	// Steps says what was done, e.g. "2 packages (apt)", "1 file".
	Steps []string
	// Tail is the last lines of the last command's output.
	Tail string
}

// Summary is one line for history and logs.
func (o *Outcome) Summary() string {
	s := fmt.Sprintf("provisioned in %s", o.Duration.Round(time.Millisecond))
	if len(o.Steps) > 0 {
		s += ": " + strings.Join(o.Steps, ", ")
	}
	if o.Tail != "" {
		s += "; last output:\n" + o.Tail
	}
	return s
}

// StepError is a failed step: which one, the command's exit status (-1
// when it did not get to run or end) and the last lines of its output.
// Its message leaves the duration out, so that the same failure repeated
// reads the same (the controller writes it to the history once).
type StepError struct {
	Step       string
	ExitStatus int
	Tail       string
	Duration   time.Duration
	Err        error
}

func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provisioning failed at %s", e.Step)
	if e.ExitStatus >= 0 {
		fmt.Fprintf(&b, ": exit status %d", e.ExitStatus)
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Tail != "" {
		fmt.Fprintf(&b, "; output (last lines):\n%s", e.Tail)
	}
	return b.String()
}

func (e *StepError) Unwrap() error { return e.Err }

// Run connects to the guest and applies the inputs: packages, files,
// copies, commands, in that order. A failing step stops the run. progress
// (may be nil) receives a line per step for the live log.
func (r *Runner) Run(ctx context.Context, t Target, in *Inputs, progress func(string)) (*Outcome, error) {
	if progress == nil {
		progress = func(string) {}
	}
	start := time.Now()
	wait := r.ConnectWait
	if wait <= 0 {
		wait = 3 * time.Minute
	}
	fail := func(step string, err error, out string) error {
		se := &StepError{Step: step, ExitStatus: -1, Duration: time.Since(start), Err: err,
			Tail: lastLines(out, r.tailLines())}
		var ee *ExitError
		if errors.As(err, &ee) {
			se.ExitStatus = ee.Status
		}
		return se
	}
	c, err := r.dial(ctx, t, wait, progress)
	if err != nil {
		return nil, fail("connect", err, "")
	}
	defer c.close()
	o := &Outcome{}
	if len(in.Packages) > 0 {
		pm, out, err := detectPackageManager(ctx, c)
		if err != nil {
			return nil, fail("packages", err, out)
		}
		progress(fmt.Sprintf("installing %d package(s) with %s: %s", len(in.Packages), pm.name, strings.Join(in.Packages, " ")))
		cmd := pm.install(in.Packages)
		if c.user != "root" {
			cmd = "sudo -n sh -c " + quote(cmd)
		}
		if err := r.fenced(ctx, func() (err error) { out, err = c.run(ctx, cmd, nil); return err }); err != nil {
			return nil, fail("packages ("+pm.name+")", err, out)
		}
		o.Steps = append(o.Steps, fmt.Sprintf("%d package(s) (%s)", len(in.Packages), pm.name))
	}
	for _, f := range in.Files {
		progress("writing " + f.Path)
		if err := r.fenced(ctx, func() error {
			if err := c.writeFile(ctx, f.Path, f.Data, f.Mode); err != nil || f.Owner == "" {
				return err
			}
			return c.chown(ctx, f.Owner, []string{f.Path})
		}); err != nil {
			return nil, fail("files "+f.Path, err, "")
		}
	}
	if n := len(in.Files); n > 0 {
		o.Steps = append(o.Steps, fmt.Sprintf("%d file(s)", n))
	}
	for _, cp := range in.Copies {
		progress(fmt.Sprintf("copying %s to %s (%d files)", cp.Source, cp.Path, len(cp.Tree)))
		if err := r.fenced(ctx, func() error { return copyTree(ctx, c, cp) }); err != nil {
			return nil, fail("copy "+cp.Path, err, "")
		}
		o.Steps = append(o.Steps, fmt.Sprintf("copy %s (%d files)", cp.Path, len(cp.Tree)))
	}
	for i, cmd := range in.Commands {
		step := fmt.Sprintf("command %d/%d `%s`", i+1, len(in.Commands), abbreviate(cmd))
		progress("running " + step)
		t0 := time.Now()
		var out string
		err := r.fenced(ctx, func() (err error) { out, err = c.run(ctx, cmd, nil); return err })
		if err != nil {
			return nil, fail(step, err, out)
		}
		o.Tail = lastLines(out, r.tailLines())
		progress(fmt.Sprintf("%s exited 0 in %s", step, time.Since(t0).Round(time.Millisecond)))
	}
	if n := len(in.Commands); n > 0 {
		o.Steps = append(o.Steps, fmt.Sprintf("%d command(s)", n))
	}
	o.Duration = time.Since(start)
	return o, nil
}

// copyTree writes a copied directory: its directories, then its files,
// then the owner of both when one is set.
func copyTree(ctx context.Context, c *conn, cp Copy) error {
	dirs := map[string]bool{cp.Path: true}
	owned := []string{cp.Path}
	if err := c.mkdirAll(ctx, cp.Path); err != nil {
		return err
	}
	for _, f := range cp.Tree {
		dst := path.Join(cp.Path, f.Path)
		for d := path.Dir(dst); !dirs[d] && d != "/" && d != "."; d = path.Dir(d) {
			dirs[d] = true
			owned = append(owned, d)
		}
	}
	for _, f := range cp.Tree {
		dst := path.Join(cp.Path, f.Path)
		if err := c.writeFile(ctx, dst, f.Data, f.Mode); err != nil {
			return err
		}
		owned = append(owned, dst)
	}
	if cp.Owner != "" {
		return c.chown(ctx, cp.Owner, owned)
	}
	return nil
}

func abbreviate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// packageManager is one distribution's installer.
type packageManager struct {
	name    string
	install func(pkgs []string) string
}

var packageManagers = map[string]packageManager{
	"apt": {"apt", func(p []string) string {
		return "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q " + strings.Join(p, " ")
	}},
	"apk": {"apk", func(p []string) string { return "apk add --no-progress " + strings.Join(p, " ") }},
	"dnf": {"dnf", func(p []string) string { return "dnf install -y -q " + strings.Join(p, " ") }},
}

// distroFamilies maps os-release IDs to their package manager.
var distroFamilies = map[string]string{
	"debian": "apt", "ubuntu": "apt", "raspbian": "apt", "linuxmint": "apt", "devuan": "apt", "kali": "apt", "pop": "apt",
	"alpine": "apk",
	"fedora": "dnf", "rhel": "dnf", "centos": "dnf", "rocky": "dnf", "almalinux": "dnf", "ol": "dnf", "amzn": "dnf",
}

// detectPackageManager reads /etc/os-release: ID, then each of ID_LIKE.
func detectPackageManager(ctx context.Context, c *conn) (packageManager, string, error) {
	out, err := c.run(ctx, "cat /etc/os-release", nil)
	if err != nil {
		return packageManager{}, out, fmt.Errorf("reading /etc/os-release to choose the package manager: %w", err)
	}
	return packageManagerFor(out)
}

func packageManagerFor(osRelease string) (packageManager, string, error) {
	vars := map[string]string{}
	for _, l := range strings.Split(osRelease, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if ok {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	ids := append([]string{vars["ID"]}, strings.Fields(vars["ID_LIKE"])...)
	for _, id := range ids {
		if pm, ok := distroFamilies[strings.ToLower(id)]; ok {
			return packageManagers[pm], "", nil
		}
	}
	return packageManager{}, "", fmt.Errorf("no known package manager for ID=%q ID_LIKE=%q in /etc/os-release (apt, apk and dnf are supported)", vars["ID"], vars["ID_LIKE"])
}

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// manifestTexts keeps each resource's YAML document as it is in the
// checkout (comments and key order included), read when the revision is
// loaded: a later sync may remove the checkout.
func manifestTexts(dir string, set *manifest.Set) map[string]string {
	files := map[string][]byte{}
	out := map[string]string{}
	fi, err := os.Stat(dir)
	if err != nil {
		return out
	}
	for _, r := range set.Resources {
		o := r.Source()
		path := dir
		if fi.IsDir() {
			path = filepath.Join(dir, filepath.FromSlash(o.File))
		}
		data, ok := files[path]
		if !ok {
			data, _ = os.ReadFile(path)
			files[path] = data
		}
		out[vocab.Key(r.Kind(), r.Name())] = documentAt(data, o.Line)
	}
	return out
}

// documentAt is the YAML document holding line (1-based): the lines
// between the separators ("---", "...") around it.
func documentAt(data []byte, line int) string {
	lines := strings.SplitAfter(string(data), "\n")
	sep := func(l string) bool {
		l = strings.TrimRight(l, " \t\r\n")
		return l == "---" || l == "..." || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "---\t")
	}
	if line < 1 || line > len(lines) {
		return string(data)
	}
	start := line - 1
	for start > 0 && !sep(lines[start-1]) {
		start--
	}
	end := line
	for end < len(lines) && !sep(lines[end]) {
		end++
	}
	return strings.Join(lines[start:end], "")
}

// Manifest is a declared resource's document as in Git.
func (c *Controller) Manifest(ctx context.Context, kind, name string) (api.Manifest, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := vocab.Key(kind, name)
	ds := c.desired
	if ds == nil {
		return api.Manifest{}, c.notLoadedLocked()
	}
	r, ok := ds.byKey[key]
	if !ok {
		if c.resources[key] != nil {
			return api.Manifest{}, fmt.Errorf("%s has no manifest: it exists only on the cluster: %w", key, api.ErrNotFound)
		}
		return api.Manifest{}, fmt.Errorf("no resource %s: %w", key, api.ErrNotFound)
	}
	return api.Manifest{Kind: kind, Name: name, File: r.Source().File, Line: r.Source().Line, Revision: ds.commit, Text: ds.texts[key]}, nil
}

// Live reads a guest's configuration from Proxmox now, the way Proxmox
// answers it (GET /nodes/{node}/qemu|lxc/{vmid}/config); other kinds have
// no single config to read, so they get what the last pass observed.
// Proxmox masks cipassword itself (qemu-server API2/Qemu.pm, vm_config);
// it is masked here too, so no reader ever depends on that.
func (c *Controller) Live(ctx context.Context, kind, name string) (api.Live, error) {
	key := vocab.Key(kind, name)
	c.mu.Lock()
	r := c.resources[key]
	var observed map[string]any
	var node string
	var vmid int
	if r != nil {
		observed, node, vmid = r.observed, r.sum.Node, r.sum.VMID
	}
	observedAt := time.Now().UTC()
	if c.lastPass != nil {
		observedAt = *c.lastPass
	}
	c.mu.Unlock()
	if r == nil {
		return api.Live{}, fmt.Errorf("no resource %s: %w", key, api.ErrNotFound)
	}
	typ := manifest.Kind(kind).Info().PVEType
	rt := c.currentRuntime()
	if typ == "" || node == "" || vmid == 0 || rt.client == nil {
		if observed == nil {
			return api.Live{}, fmt.Errorf("%s does not exist on the cluster: %w", key, api.ErrNotFound)
		}
		return api.Live{Kind: kind, Name: name, Source: "last pass", Time: observedAt, Data: observed}, nil
	}
	path := fmt.Sprintf("/nodes/%s/%s/%d/config", node, typ, vmid)
	var cfg map[string]any
	err := rt.client.Get(ctx, path, nil, &cfg)
	if pve.IsNotFound(err) && observed == nil {
		return api.Live{}, fmt.Errorf("%s does not exist on the cluster: %w", key, api.ErrNotFound)
	}
	if err != nil {
		return api.Live{}, fmt.Errorf("reading %s from Proxmox: %w", path, err)
	}
	if _, ok := cfg["cipassword"]; ok {
		cfg["cipassword"] = "**********"
	}
	c.lookedAt(vmid)
	return api.Live{Kind: kind, Name: name, Source: "proxmox", Path: path, Time: time.Now().UTC(), Data: cfg}, nil
}

// lookedAt: someone opened a guest's detail or its live configuration.
// The next pass, asked for now, reads it, so the status agrees with what
// they see. Always: even a read by the last pass may predate a change by
// hand made just before they looked. It cannot loop: a detail is asked
// for again only when the resource's summary changed, and passes are at
// least MinPassGap apart.
func (c *Controller) lookedAt(vmid int) {
	if vmid <= 0 {
		return
	}
	c.currentRuntime().reads.Refresh(vmid)
	c.askRescan()
}

// TaskLog is the log of the last Proxmox task of the resource's actions,
// read from Proxmox now (the drawer follows it while the task runs).
func (c *Controller) TaskLog(ctx context.Context, kind, name string) (api.TaskLog, error) {
	key := vocab.Key(kind, name)
	c.mu.Lock()
	r := c.resources[key]
	var task string
	var running bool
	if r != nil {
		task = r.lastTask
		running = r.sum.Progress != nil && r.sum.Progress.Task == task
	}
	c.mu.Unlock()
	switch {
	case r == nil:
		return api.TaskLog{}, fmt.Errorf("no resource %s: %w", key, api.ErrNotFound)
	case task == "":
		return api.TaskLog{Lines: []string{}}, nil
	}
	rt := c.currentRuntime()
	if rt.client == nil {
		return api.TaskLog{}, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	lines, err := rt.client.TaskLog(ctx, task, 0, 1000)
	if err != nil {
		return api.TaskLog{}, fmt.Errorf("reading the log of %s from Proxmox: %w", task, err)
	}
	out := api.TaskLog{Task: task, Running: running, Lines: make([]string, 0, len(lines))}
	for _, l := range lines {
		out.Lines = append(out.Lines, l.T)
	}
	return out, nil
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// Ownership of downloaded volumes (ISOs, container templates, cloud
// images). Proxmox keeps notes for backups only (pve-storage DirPlugin.pm
// update_volume_notes), so the mark is the download itself: a volume is
// proxmops' when, in the task history of its node, the newest task that
// wrote or removed its file is a successful download by proxmops' token
// that wrote it, and the file has not changed since that task ended. See
// docs/architecture.md ("Ownership of downloaded volumes") for the failure
// modes.

// Records keeps what proxmops asked for when it downloaded a volume (the
// source and checksum, which Proxmox's task log does not fully keep), keyed
// by the download's task id. *store.Store implements it; without one, the
// engine keeps the records in memory.
type Records interface {
	State(ctx context.Context, key string) ([]byte, bool, error)
	PutState(ctx context.Context, key string, value []byte) error
}

// memRecords is the in-memory Records of an engine without a store.
type memRecords struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (r *memRecords) State(_ context.Context, key string) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[key]
	return v, ok, nil
}

func (r *memRecords) PutState(_ context.Context, key string, value []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string][]byte{}
	}
	r.m[key] = value
	return nil
}

// downloadRecord is what Records keeps per download task.
type downloadRecord struct {
	Source   string `json:"source"`
	Checksum string `json:"checksum,omitempty"`
}

func recordKey(upid string) string { return "download:" + upid }

// volumeKey names a proven volume in Records.
func volumeKey(node string, shared bool, volid string) string {
	if shared {
		node = "shared"
	}
	return "volume:" + node + "/" + volid
}

// downloadDone describes a finished download for recordDownload.
type downloadDone struct {
	upid, node, storage, volid, content string
	shared                              bool
	source, checksum                    string
}

// recordDownload remembers the source and checksum of a download that
// succeeded and, when its log shows it wrote the file, the file as proven
// ours (so plans need not read the task history for it). A lost record
// only costs a later proof from the task history, or the checksum's drift
// detection.
func (x *execCtx) recordDownload(ctx context.Context, d downloadDone) {
	if d.upid == "" {
		return
	}
	rec := x.e.records
	b, _ := json.Marshal(downloadRecord{Source: d.source, Checksum: d.checksum})
	if err := rec.PutState(ctx, recordKey(d.upid), b); err != nil {
		x.e.log.Debug("recording a download", "task", d.upid, "error", err)
		return
	}
	lines, err := x.e.client.TaskLog(ctx, d.upid, 0, 50000)
	if err != nil {
		return
	}
	url := ""
	for _, l := range lines {
		if m := reDownloadDone.FindStringSubmatch(l.T); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		return // the file was there already: not written by this task
	}
	vols, err := x.e.client.StorageContent(ctx, d.node, d.storage, d.content)
	if err != nil {
		return
	}
	for _, v := range vols {
		if v.VolID == d.volid && v.CTime > 0 {
			b, _ := json.Marshal(provenVolume{UPID: d.upid, Source: url, CTime: int64(v.CTime), Size: int64(v.Size)})
			_ = rec.PutState(ctx, volumeKey(d.node, d.shared, d.volid), b)
		}
	}
}

// downloadTask runs a download and returns its task id.
func (x *execCtx) downloadTask(ctx context.Context, msg string, start func() (string, error)) (string, error) {
	var upid string
	err := x.task(ctx, msg, func() (string, error) {
		u, err := start()
		upid = u
		return u, err
	})
	return upid, err
}

// volumeProof is the download that makes a volume proxmops'.
type volumeProof struct {
	UPID   string
	Source string // the URL the task downloaded, from its log
	// Checksum is the checksum the download was asked to verify, from
	// Records; recorded says whether it is known.
	Checksum string
	recorded bool
}

// ctimeSlack is how long after its download task ended a file may have
// been changed last (the rename ending the download, clock steps).
const ctimeSlack = 120

// historyLimit bounds the task history read per node; Proxmox keeps about
// 1000 to 2000 finished tasks per node (pve-common RESTEnvironment.pm rotates
// its 50 kB index).
const historyLimit = 5000

// ownerCache holds, for one plan, the task histories and volume paths the
// ownership proofs read.
type ownerCache struct {
	mu      sync.Mutex
	history map[string][]pve.TaskStatus
	histErr map[string]error
	paths   map[string]string
}

func (pc *planContext) owners() *ownerCache {
	pc.ownersOnce.Do(func() {
		pc.ownerCache = &ownerCache{history: map[string][]pve.TaskStatus{}, histErr: map[string]error{},
			paths: map[string]string{}}
	})
	return pc.ownerCache
}

// nodeHistory lists a node's finished tasks, all users, newest first.
func (pc *planContext) nodeHistory(node string) ([]pve.TaskStatus, error) {
	oc := pc.owners()
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if h, ok := oc.history[node]; ok || oc.histErr[node] != nil {
		return h, oc.histErr[node]
	}
	// Without Sys.Audit on the node, Proxmox lists only the token's own
	// tasks (API2/Tasks.pm node_tasks, $check_task_user): another user's
	// later upload or download would be hidden, so nothing is proven.
	var perms map[string]map[string]any
	path := "/nodes/" + node
	if err := pc.e.client.Get(pc.ctx, "access/permissions", pve.NewParams().Set("path", path), &perms); err != nil {
		oc.histErr[node] = fmt.Errorf("reading the token's privileges on %s: %w", path, err)
		return nil, oc.histErr[node]
	}
	if _, ok := perms[path]["Sys.Audit"]; !ok {
		oc.histErr[node] = fmt.Errorf("the token lacks Sys.Audit on %s, so Proxmox hides other users' tasks from it", path)
		return nil, oc.histErr[node]
	}
	h, err := pc.e.client.NodeTasks(pc.ctx, node, pve.TaskFilter{Limit: historyLimit})
	if err != nil {
		oc.histErr[node] = err
		return nil, err
	}
	oc.history[node] = h
	return h, nil
}

// taskLog reads the lines of a finished task's log that ownership proofs
// look at. Finished tasks' logs do not change, so the engine keeps them.
func (pc *planContext) taskLog(upid string) ([]string, error) {
	return pc.e.logs.get(pc.ctx, pc.e.client, upid)
}

// TaskLogCache keeps the lines of finished tasks' logs that ownership
// proofs read; share one between the engines of one cluster (its zero value
// is ready).
type TaskLogCache struct {
	mu sync.Mutex
	m  map[string][]string
}

// proofLine reports whether a log line can matter to an ownership proof.
func proofLine(l string) bool {
	for _, p := range []string{"download of '", "target file: ", "Removed volume '", "creating a clone of "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func (c *TaskLogCache) get(ctx context.Context, client *pve.Client, upid string) ([]string, error) {
	c.mu.Lock()
	l, ok := c.m[upid]
	c.mu.Unlock()
	if ok {
		return l, nil
	}
	lines, err := client.TaskLog(ctx, upid, 0, 50000)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, l := range lines {
		if proofLine(l.T) {
			out = append(out, l.T)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > 20000 {
		c.m = map[string][]string{}
	}
	c.m[upid] = out
	return out, nil
}

func (pc *planContext) volumePath(node, storage, volid string) (string, error) {
	oc := pc.owners()
	key := node + "/" + volid
	oc.mu.Lock()
	p, ok := oc.paths[key]
	oc.mu.Unlock()
	if ok {
		return p, nil
	}
	info, err := pc.e.client.VolumeInfo(pc.ctx, node, storage, volid)
	if err != nil {
		return "", err
	}
	oc.mu.Lock()
	oc.paths[key] = info.Path
	oc.mu.Unlock()
	return info.Path, nil
}

var (
	reDownloadDone = regexp.MustCompile(`^download of '(.*)' to '(.*)' finished$`)
	reRemovedVol   = regexp.MustCompile(`^Removed volume '(.*)'$`)
)

// fileEvent is the newest task that wrote or removed a file.
type fileEvent struct {
	task   pve.TaskStatus
	ours   bool   // a download by proxmops' token that wrote the file
	source string // the URL of a download
}

// proveDownload decides whether v, listed on node, is proxmops' own
// download. nil without error means it cannot be proven (never ours); an
// error means the history could not be read (unknown).
func (pc *planContext) proveDownload(node string, v pve.Volume) (*volumeProof, error) {
	storage := pvefields.StorageOf(v.VolID)
	file := v.FileName()
	nodes := []string{node}
	if ref := pc.snap.Storage(node, storage); ref != nil && ref.Shared {
		nodes = pc.snap.Nodes
	}
	token := pc.e.client.TokenID()
	vkey := volumeKey(node, len(nodes) > 1, v.VolID)
	if p := pc.provenBefore(vkey, v); p != nil {
		return p, nil
	}
	// Cheap first: without a successful download of that name by our
	// token, nothing more is read.
	candidate := false
	for _, n := range nodes {
		h, err := pc.nodeHistory(n)
		if err != nil {
			return nil, err // a node's writes unseen: nothing is proven
		}
		for _, t := range h {
			if t.Type == "download" && t.ID == file && t.Issuer() == token && t.Succeeded() {
				candidate = true
			}
		}
	}
	if !candidate {
		return nil, nil
	}
	path, err := pc.volumePath(node, storage, v.VolID)
	if err != nil {
		return nil, err
	}
	var newest *fileEvent
	for _, n := range nodes {
		h, err := pc.nodeHistory(n)
		if err != nil {
			return nil, err
		}
		ev, err := pc.lastFileEvent(h, storage, file, v.VolID, path, token)
		if err != nil {
			return nil, err
		}
		if ev != nil && (newest == nil || ev.task.StartTime > newest.task.StartTime) {
			newest = ev
		}
	}
	if newest == nil || !newest.ours {
		return nil, nil
	}
	if v.CTime > 0 && newest.task.EndTime > 0 && int64(v.CTime) > int64(newest.task.EndTime)+ctimeSlack {
		return nil, nil // changed after our download ended: replaced outside the API
	}
	p := &volumeProof{UPID: newest.task.UPID, Source: newest.source}
	if v.CTime > 0 {
		b, _ := json.Marshal(provenVolume{UPID: p.UPID, Source: p.Source, CTime: int64(v.CTime), Size: int64(v.Size)})
		if err := pc.e.records.PutState(pc.ctx, vkey, b); err != nil {
			pc.e.log.Debug("recording a proven volume", "volume", v.VolID, "error", err)
		}
	}
	pc.addChecksum(p)
	return p, nil
}

// provenVolume records a volume proven proxmops' download, with the file's
// change time and size then: while both are unchanged the file is the one
// that task wrote (an upload, a removal and new download, or a copy by hand
// all change its ctime), so the proof needs no task history any more and
// survives the rotation of Proxmox's task index.
type provenVolume struct {
	UPID   string `json:"upid"`
	Source string `json:"source"`
	CTime  int64  `json:"ctime"`
	Size   int64  `json:"size"`
}

func (pc *planContext) provenBefore(key string, v pve.Volume) *volumeProof {
	if v.CTime <= 0 {
		return nil
	}
	b, ok, err := pc.e.records.State(pc.ctx, key)
	if err != nil || !ok {
		return nil
	}
	var r provenVolume
	if json.Unmarshal(b, &r) != nil || r.CTime != int64(v.CTime) || r.Size != int64(v.Size) {
		return nil
	}
	p := &volumeProof{UPID: r.UPID, Source: r.Source}
	pc.addChecksum(p)
	return p
}

// addChecksum adds the checksum the proving download was asked to verify.
func (pc *planContext) addChecksum(p *volumeProof) {
	if b, ok, err := pc.e.records.State(pc.ctx, recordKey(p.UPID)); err == nil && ok {
		var r downloadRecord
		if json.Unmarshal(b, &r) == nil {
			p.Checksum, p.recorded = r.Checksum, true
		}
	}
}

// lastFileEvent walks a node's history (newest first) to the newest task
// that wrote the file at path (a download that finished writing it, an
// upload) or removed the volume.
func (pc *planContext) lastFileEvent(h []pve.TaskStatus, storage, file, volid, path, token string) (*fileEvent, error) {
	for _, t := range h {
		if t.Running() {
			continue
		}
		switch {
		case t.Type == "download" && t.ID == file && t.Succeeded():
			lines, err := pc.taskLog(t.UPID)
			if err != nil {
				return nil, err
			}
			for _, l := range lines {
				// A download that found the file already there ("OK, got
				// correct file already") wrote nothing.
				if m := reDownloadDone.FindStringSubmatch(l); m != nil && m[2] == path {
					return &fileEvent{task: t, ours: t.Issuer() == token, source: m[1]}, nil
				}
			}
		case t.Type == "imgcopy" && t.Succeeded():
			lines, err := pc.taskLog(t.UPID)
			if err != nil {
				return nil, err
			}
			for _, l := range lines {
				if l == "target file: "+path {
					return &fileEvent{task: t}, nil
				}
			}
		case t.Type == "imgdel" && t.ID == storage:
			lines, err := pc.taskLog(t.UPID)
			if err != nil {
				return nil, err
			}
			for _, l := range lines {
				if m := reRemovedVol.FindStringSubmatch(l); m != nil && m[1] == volid {
					return &fileEvent{task: t}, nil
				}
			}
		}
	}
	return nil, nil
}

// notProvenReason says why a volume is left alone.
func notProvenReason(volid, node, token string) string {
	return fmt.Sprintf("%s exists on %s but proxmops cannot prove it downloaded it (the newest task in the node's task history that wrote or removed it is not a download by %s): left untouched", volid, node, token)
}

// checksumKey normalises "algo:value" for comparisons.
func checksumKey(algo, value string) string {
	if algo == "" || value == "" {
		return ""
	}
	return strings.ToLower(algo) + ":" + strings.ToLower(value)
}

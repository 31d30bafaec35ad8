package pve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// UPID is a parsed Proxmox task id:
// UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:
type UPID struct {
	Raw  string
	Node string
	Type string
	ID   string
	User string
}

// ParseUPID parses a task id.
func ParseUPID(s string) (UPID, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 9 || parts[0] != "UPID" || parts[1] == "" {
		return UPID{}, fmt.Errorf("pve: malformed task id %q", s)
	}
	// The user may itself contain ':'? It does not (user@realm!token), but
	// the trailing colon leaves an empty last element.
	return UPID{Raw: s, Node: parts[1], Type: parts[5], ID: parts[6], User: strings.Join(parts[7:len(parts)-1], ":")}, nil
}

// TaskStatus reads the status of a task.
func (c *Client) TaskStatus(ctx context.Context, upid string) (TaskStatus, error) {
	u, err := ParseUPID(upid)
	if err != nil {
		return TaskStatus{}, err
	}
	var st TaskStatus
	err = c.Get(ctx, "nodes/"+PathEscape(u.Node)+"/tasks/"+PathEscape(upid)+"/status", nil, &st)
	return st, err
}

// TaskLog reads log lines of a task, from line start (0-based), at most limit
// lines (0: the server's default).
func (c *Client) TaskLog(ctx context.Context, upid string, start, limit int) ([]TaskLogLine, error) {
	u, err := ParseUPID(upid)
	if err != nil {
		return nil, err
	}
	q := NewParams()
	if start > 0 {
		q.SetInt("start", start)
	}
	if limit > 0 {
		q.SetInt("limit", limit)
	}
	var lines []TaskLogLine
	err = c.Get(ctx, "nodes/"+PathEscape(u.Node)+"/tasks/"+PathEscape(upid)+"/log", q, &lines)
	if isEmptyLogPlaceholder(lines) {
		return nil, err
	}
	return lines, err
}

// emptyLogText is the line Proxmox answers for a task log with no line
// yet, whatever the start (pve-common Tools.pm dump_logfile_by_filehandle).
const emptyLogText = "no content"

// isEmptyLogPlaceholder says whether a read is Proxmox's answer for an
// empty log: it is not a line of the log, and counting it would skip the
// real first line on the next read. A log whose only line so far reads
// "no content" is told apart only by its next line: until then it is
// taken as empty and read again from its start.
func isEmptyLogPlaceholder(lines []TaskLogLine) bool {
	return len(lines) == 1 && lines[0].N == 1 && lines[0].T == emptyLogText
}

// TaskObserver is told about each poll of a running task.
type TaskObserver func(TaskStatus)

// WaitTask polls a task until it stops and returns its final status. A
// task that stopped with anything but OK or "WARNINGS: N" yields a
// *TaskError carrying the exit status and the last log lines. An empty
// upid (an operation that finished synchronously) returns at once.
//
// The first poll comes after the time tasks of the same type took lately
// (see taskTimes; TaskPollMin for a type not seen yet, never more than
// TaskPollMax), so that a short task is read once, when it has ended;
// later polls come at a growing interval, from TaskPollMin to TaskPollMax.
func (c *Client) WaitTask(ctx context.Context, upid string, observe TaskObserver) (TaskStatus, error) {
	if upid == "" {
		return TaskStatus{Status: "stopped", ExitStatus: "OK"}, nil
	}
	u, err := ParseUPID(upid)
	if err != nil {
		return TaskStatus{}, err
	}
	start := time.Now()
	first := c.taskTimes.expect(u.Type, c.cfg.TaskPollMin, c.cfg.TaskPollMax)
	wait, interval := first, c.cfg.TaskPollMin
	for polls := 1; ; polls++ {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return TaskStatus{}, ctx.Err()
		case <-t.C:
		}
		st, err := c.TaskStatus(ctx, upid)
		if err != nil {
			return st, fmt.Errorf("waiting for task %s on %s: %w", u.Type, u.Node, err)
		}
		if observe != nil {
			observe(st)
		}
		if !st.Running() && st.Status != "" {
			c.taskTimes.learn(u.Type, polls == 1, first, time.Since(start))
			if st.Succeeded() {
				return st, nil
			}
			te := &TaskError{UPID: upid, Type: u.Type, ExitStatus: st.ExitStatus}
			te.Log = c.lastLogLines(ctx, upid, 10)
			return st, te
		}
		wait = interval
		interval = min(interval*3/2, c.cfg.TaskPollMax)
	}
}

// taskTimes remembers, per task type, how long to wait before the first
// poll: the time tasks of that type were last seen to take. A task that
// had ended at its first poll lowers it a little (it may have ended
// sooner), one that had not raises it to the time it was seen to end.
type taskTimes struct {
	mu sync.Mutex
	by map[string]time.Duration
}

func (tt *taskTimes) expect(typ string, lo, hi time.Duration) time.Duration {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	d, ok := tt.by[typ]
	if !ok {
		return lo
	}
	return min(d, hi)
}

func (tt *taskTimes) learn(typ string, firstPoll bool, waited, took time.Duration) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.by == nil {
		tt.by = map[string]time.Duration{}
	}
	if firstPoll {
		tt.by[typ] = waited * 15 / 16
	} else {
		tt.by[typ] = took
	}
}

// lastLogLines fetches the tail of a task log; failures leave it empty since
// the exit status already says what went wrong.
func (c *Client) lastLogLines(ctx context.Context, upid string, n int) []string {
	lines, err := c.TaskLog(ctx, upid, 0, 5000)
	if err != nil {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.T)
	}
	return out
}

// TaskFilter narrows GET /nodes/{node}/tasks.
type TaskFilter struct {
	Type string // typefilter, e.g. "download"
	User string // userfilter: a case-insensitive substring of the user, token name cut off
	// Issuer keeps only the tasks whose UPID names exactly this user or
	// full token id. The server filters on its user part (a token's tasks
	// are filtered without the token's name), the rest is done here.
	Issuer string
	VMID   int
	Source string // archive (default), active, all
	Limit  int
}

// NodeTasks lists a node's tasks, newest first.
func (c *Client) NodeTasks(ctx context.Context, node string, f TaskFilter) ([]TaskStatus, error) {
	q := NewParams()
	if f.Type != "" {
		q.Set("typefilter", f.Type)
	}
	userFilter := f.User
	if f.Issuer != "" && userFilter == "" {
		userFilter, _, _ = strings.Cut(f.Issuer, "!")
	}
	if userFilter != "" {
		q.Set("userfilter", userFilter)
	}
	if f.VMID > 0 {
		q.SetInt("vmid", f.VMID)
	}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	if f.Limit > 0 {
		q.SetInt("limit", f.Limit)
	}
	var raw []struct {
		TaskStatus
		Status string `json:"status"`
	}
	if err := c.Get(ctx, "nodes/"+PathEscape(node)+"/tasks", q, &raw); err != nil {
		return nil, err
	}
	out := make([]TaskStatus, 0, len(raw))
	for _, r := range raw {
		t := r.TaskStatus
		if f.Issuer != "" && t.Issuer() != f.Issuer {
			continue
		}
		// The list gives the exit status in "status" for finished tasks
		// (active ones may read RUNNING).
		if strings.EqualFold(r.Status, "running") {
			t.Status = "running"
		} else {
			t.Status, t.ExitStatus = "stopped", r.Status
		}
		out = append(out, t)
	}
	return out, nil
}

package pvesim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// savedState is the JSON snapshot: the cluster state and the task list.
type savedState struct {
	*clusterState
	Tasks []*Task `json:"tasks,omitempty"`
}

// StateJSON returns the whole cluster state, tasks included, as JSON.
func (s *Server) StateJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.MarshalIndent(savedState{clusterState: s.state, Tasks: s.tasks.order}, "", "  ")
}

// SaveState writes the cluster state to a file (atomically).
func (s *Server) SaveState(path string) error {
	b, err := s.StateJSON()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pvesim-state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadState replaces the cluster state with one saved by SaveState, as a
// cluster that was shut down and started again finds it: tasks that were
// running have been interrupted ("received interrupt"), and what their
// error paths clean up is gone (half-created guests and their volumes, the
// lock of a container clone's source). Faults are not part of the state:
// they come from Options or SetFaults. Call it before serving requests.
func (s *Server) LoadState(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cs clusterState
	saved := savedState{clusterState: &cs}
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("state file %s: %w", path, err)
	}
	if len(cs.Nodes) == 0 {
		return fmt.Errorf("state file %s: no nodes", path)
	}
	cs.reindex()
	for i, n := range cs.Nodes {
		n.nextPID = 10000 + 1000*(i+1)
		// Uptimes are whole seconds since a whole-second boot time.
		n.BootTime = n.BootTime.Truncate(time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	s.state = &cs
	s.resetStats()
	s.locks = map[int]*guestLock{}
	tasks := newTaskTable()
	now := s.clock.Now()
	for _, t := range saved.Tasks {
		if t == nil || t.UPID == "" {
			continue
		}
		t.done = make(chan struct{})
		close(t.done)
		if t.Running {
			s.interruptTask(t, now)
		}
		if n := cs.node(t.Node); n != nil && t.PID > n.nextPID {
			n.nextPID = t.PID
		}
		tasks.add(t)
	}
	s.tasks = tasks
	// The HA manager goes on with what it had to do (its LRM workers were
	// interrupted with the other tasks).
	s.haKick()
	return nil
}

// interruptTask ends a task that was running when the state was saved, as
// the worker's signal handler does, and undoes what its error path undoes.
func (s *Server) interruptTask(t *Task, now time.Time) {
	t.Running = false
	t.EndTime = now
	msg := strings.TrimRight(route.AsAPIError(errInterrupted).Message, "\n")
	id, _ := strconv.Atoi(t.ID)
	switch t.Type {
	case "qmcreate", "vzcreate":
		if g := s.state.Guests[id]; g != nil && g.Conf["lock"] == "create" {
			kind := "VM"
			if t.Type == "vzcreate" {
				kind = "CT"
			}
			msg = fmt.Sprintf("unable to create %s %d - %s", kind, id, msg)
			s.dropUnfinishedGuest(g, g.Creating)
		}
	case "qmclone":
		msg = "clone failed: interrupted by signal"
		if g := s.state.Guests[t.Target]; g != nil && t.Target != 0 && g.Conf["lock"] == "clone" {
			s.dropUnfinishedGuest(g, guestVolumes(g.Conf))
		}
	case "vzclone":
		msg = "clone failed: " + msg
		if g := s.state.Guests[t.Target]; g != nil && t.Target != 0 && g.Conf["lock"] == "create" {
			s.dropUnfinishedGuest(g, lxcVolumes(g.Conf))
		}
		if src := s.state.Guests[id]; src != nil && src.Conf["lock"] == "disk" {
			delete(src.Conf, "lock")
		}
	}
	t.ExitStatus = msg
	t.Log = append(t.Log, "TASK ERROR: "+msg)
}

func (s *Server) dropUnfinishedGuest(g *Guest, volumes []string) {
	for _, volid := range volumes {
		s.state.removeVolume(g.Node, volid)
	}
	delete(s.state.Guests, g.VMID)
}

package pvesim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StateJSON returns the whole cluster state as JSON.
func (s *Server) StateJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.MarshalIndent(s.state, "", "  ")
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

// LoadState replaces the cluster state with one saved by SaveState.
func (s *Server) LoadState(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cs clusterState
	if err := json.Unmarshal(b, &cs); err != nil {
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
	return nil
}

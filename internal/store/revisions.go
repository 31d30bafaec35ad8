package store

import (
	"context"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
)

// HistoryByCommit counts the history events recorded with each of the
// given commits: what the passes at that commit did.
func (s *Store) HistoryByCommit(ctx context.Context, commits []string) (map[string]map[api.HistoryEvent]int, error) {
	out := map[string]map[api.HistoryEvent]int{}
	if len(commits) == 0 {
		return out, nil
	}
	args := make([]any, len(commits))
	for i, c := range commits {
		args[i] = c
	}
	q := `SELECT commit_sha, event, COUNT(*) FROM history WHERE commit_sha IN (?` +
		strings.Repeat(", ?", len(commits)-1) + `) GROUP BY commit_sha, event`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var commit, event string
		var n int
		if err := rows.Scan(&commit, &event, &n); err != nil {
			return nil, err
		}
		if out[commit] == nil {
			out[commit] = map[api.HistoryEvent]int{}
		}
		out[commit][api.HistoryEvent(event)] = n
	}
	return out, rows.Err()
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/proxmops/proxmops/internal/api"
)

// PutPullRequest records an open request and its last plan (no secrets:
// not encrypted), replacing what was recorded for it.
func (s *Store) PutPullRequest(ctx context.Context, pr api.PullRequest) error {
	doc, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO pull_requests (forge, number, doc, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (forge, number) DO UPDATE SET doc = excluded.doc, updated_at = excluded.updated_at`,
		pr.Forge, pr.Number, doc, ms(time.Now()))
	return err
}

// PullRequest reads one recorded request; ok is false when none is.
func (s *Store) PullRequest(ctx context.Context, forge string, number int64) (pr api.PullRequest, ok bool, err error) {
	rows, err := s.db.QueryContext(ctx, `SELECT doc FROM pull_requests WHERE forge = ? AND number = ?`, forge, number)
	if err != nil {
		return pr, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return pr, false, err
		}
		return pr, true, json.Unmarshal(doc, &pr)
	}
	return pr, false, rows.Err()
}

// DeletePullRequest forgets a request (closed or merged).
func (s *Store) DeletePullRequest(ctx context.Context, forge string, number int64) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM pull_requests WHERE forge = ? AND number = ?`, forge, number)
	return err
}

// PullRequests lists the recorded requests, newest number first.
func (s *Store) PullRequests(ctx context.Context) ([]api.PullRequest, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT doc FROM pull_requests ORDER BY forge, number DESC`)
	return scanAll(rows, err, func(rows *sql.Rows) (pr api.PullRequest, err error) {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return pr, err
		}
		return pr, json.Unmarshal(doc, &pr)
	})
}

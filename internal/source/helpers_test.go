package source

import (
	"context"
	"os"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/proxmops/proxmops/internal/gittest"
)

// newTestRepo is a repository whose commits Ada signs.
func newTestRepo(t testing.TB) *gittest.Repo {
	r := gittest.New(t)
	r.Author.Name, r.Author.Email = "Ada", "ada@example.com"
	r.Author.When = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	return r
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func openRepo(dir string) (*git.Repository, error) { return git.PlainOpen(dir) }

func plumbHash(s string) plumbing.Hash { return plumbing.NewHash(s) }

type gitCheckout struct{ branch string }

func (g gitCheckout) opts() *git.CheckoutOptions {
	return &git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(g.branch)}
}

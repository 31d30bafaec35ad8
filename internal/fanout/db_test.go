package fanout

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

var dbSeq atomic.Int64

// testDB is a fresh database (temporary: replaced by the pgtest harness).
func testDB(t *testing.T) string {
	t.Helper()
	admin := os.Getenv("PROXMOPS_TEST_PG_URL")
	if admin == "" {
		t.Skip("no PostgreSQL for this test: set PROXMOPS_TEST_PG_URL to an admin connection URL (moves to the pgtest harness)")
	}
	name := fmt.Sprintf("fanout_%d_%d", os.Getpid(), dbSeq.Add(1))
	c, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + strings.TrimPrefix(name, "/")
	return u.String()
}

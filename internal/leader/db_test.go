package leader

import (
	"database/sql"
	"testing"

	"github.com/proxmops/proxmops/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testDB is a database of its own on the test binary's PostgreSQL.
func testDB(t *testing.T) string { return pgtest.Database(t) }

// linkedDB is a database of its own, a connection to it, and a link to it
// that the test can cut.
func linkedDB(t *testing.T) (string, *sql.DB, *pgtest.Link) {
	dbURL := testDB(t)
	return dbURL, pgtest.OpenDB(t, dbURL), pgtest.NewLink(t, dbURL)
}

package leader

import (
	"testing"

	"github.com/proxmops/proxmops/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testDB is a database of its own on the test binary's PostgreSQL.
func testDB(t *testing.T) string { return pgtest.Database(t) }

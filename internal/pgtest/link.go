package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Link forwards TCP to a database on loopback, so that a test can cut the
// network between a client and PostgreSQL: Freeze drops every byte from
// then on without closing anything, as a cut network does; FreezeConn does
// it to one connection, as a stuck path does.
type Link struct {
	// URL is the database URL through the link.
	URL string

	all   atomic.Bool
	mu    sync.Mutex
	conns map[int]*atomic.Bool // by the database side's local port
}

// NewLink forwards each connection to dbURL's host until the test ends,
// when every connection is closed.
func NewLink(t testing.TB, dbURL string) *Link {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	l := &Link{URL: u.String(), conns: map[int]*atomic.Bool{}}
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			db, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			frozen := &atomic.Bool{}
			l.mu.Lock()
			open = append(open, client, db)
			l.conns[db.LocalAddr().(*net.TCPAddr).Port] = frozen
			l.mu.Unlock()
			go l.pipe(db, client, frozen)
			go l.pipe(client, db, frozen)
		}
	}()
	return l
}

// Freeze cuts every connection, those made later too.
func (l *Link) Freeze() { l.all.Store(true) }

// FreezeConn cuts the connection whose database side has the local port
// port (pg_stat_activity.client_port), and says whether there was one.
func (l *Link) FreezeConn(port int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.conns[port]
	if ok {
		f.Store(true)
	}
	return ok
}

func (l *Link) pipe(dst io.Writer, src io.Reader, frozen *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if l.all.Load() || frozen.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

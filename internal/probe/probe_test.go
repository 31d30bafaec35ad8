package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func hostPort(t *testing.T, addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

// A TCP probe passes while the port accepts and fails once it is closed.
func TestTCPProbeFollowsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, p := hostPort(t, ln.Addr().String())
	c := Check{Address: h, Port: p, Timeout: 2 * time.Second}
	if err := Run(context.Background(), c); err != nil {
		t.Fatalf("open port: %v", err)
	}
	ln.Close()
	if err := Run(context.Background(), c); err == nil || err.Error() != "connection refused" {
		t.Fatalf("closed port: %v", err)
	}
}

// An HTTP probe wants the expected status, or any 2xx or 3xx without one;
// a redirect is an answer, not followed.
func TestHTTPProbeChecksTheStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusNoContent)
		case "/moved":
			http.Redirect(w, r, "/nowhere", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h, p := hostPort(t, strings.TrimPrefix(srv.URL, "http://"))
	for _, tc := range []struct {
		path   string
		expect int
		want   string
	}{
		{"/healthz", 204, ""},
		{"/healthz", 200, "answered 204 No Content, want 200"},
		{"/healthz", 0, ""},
		{"/moved", 0, ""},
		{"/missing", 0, "answered 404 Not Found"},
	} {
		err := Run(context.Background(), Check{Address: h, Port: p, HTTP: true, Path: tc.path, ExpectStatus: tc.expect, Timeout: 2 * time.Second})
		if got := errText(err); got != tc.want {
			t.Errorf("%s expect %d: %q, want %q", tc.path, tc.expect, got, tc.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/vocab"
)

type sseEvent struct {
	id, typ, data string
	comment       bool
}

// sseReader reads a real HTTP response as an EventSource would.
type sseReader struct {
	resp *http.Response
	br   *bufio.Reader
}

func openSSE(t *testing.T, c *client, path, lastID string) *sseReader {
	t.Helper()
	req, _ := http.NewRequest("GET", c.e.ts.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	hc := &http.Client{Jar: c.hc.Jar} // no client timeout: a stream lasts
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "X-Accel-Buffering": "no", "Cache-Control": "no-store"} {
		if got := resp.Header.Get(k); got != want {
			t.Fatalf("%s: %s = %q, want %q", path, k, got, want)
		}
	}
	r := &sseReader{resp: resp, br: bufio.NewReader(resp.Body)}
	t.Cleanup(func() { resp.Body.Close() })
	return r
}

// next returns the next event or comment, failing after a few seconds.
func (r *sseReader) next(t *testing.T) sseEvent {
	t.Helper()
	type res struct {
		ev  sseEvent
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var ev sseEvent
		for {
			line, err := r.br.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.typ != "" || ev.data != "" || ev.comment {
					ch <- res{ev: ev}
					return
				}
			case strings.HasPrefix(line, ":"):
				ev.comment = true
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			t.Fatalf("SSE read: %v", x.err)
		}
		return x.ev
	case <-time.After(5 * time.Second):
		t.Fatal("no SSE event within 5s")
	}
	return sseEvent{}
}

// nextEvent skips keep-alive comments.
func (r *sseReader) nextEvent(t *testing.T) sseEvent {
	t.Helper()
	for {
		if ev := r.next(t); !ev.comment {
			return ev
		}
	}
}

func TestEventsStreamResumesWithLastEventID(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	hub := e.srv.Hub()
	s := openSSE(t, a, "/api/v1/events", "")
	snap := s.nextEvent(t)
	var list api.ResourceList
	if snap.typ != "snapshot" || json.Unmarshal([]byte(snap.data), &list) != nil || len(list.Resources) != 1 || snap.id == "" {
		t.Fatalf("first event: %+v", snap)
	}
	for _, name := range []string{"a", "b", "c"} {
		hub.Publish(api.SSEResource, api.ResourceSummary{Kind: "VirtualMachine", Name: name, Status: vocab.StatusOutOfSync})
	}
	var lastID string
	for _, want := range []string{"a", "b", "c"} {
		ev := s.nextEvent(t)
		var rs api.ResourceSummary
		json.Unmarshal([]byte(ev.data), &rs)
		if ev.typ != "resource" || rs.Name != want {
			t.Fatalf("event %+v, want resource %s", ev, want)
		}
		lastID = ev.id
	}
	// Keep-alive comments flow while nothing happens.
	if ev := s.next(t); !ev.comment {
		t.Fatalf("expected a keep-alive, got %+v", ev)
	}
	s.resp.Body.Close()

	// Missed while disconnected: replayed on reconnect, no snapshot.
	hub.Publish(api.SSEPass, api.PassEvent{Revision: "def", LastPass: time.Now()})
	hub.Publish(api.SSEDeleted, api.DeletedEvent{Kind: "VirtualMachine", Name: "b"})
	s2 := openSSE(t, a, "/api/v1/events", lastID)
	if ev := s2.nextEvent(t); ev.typ != "pass" || !strings.Contains(ev.data, `"def"`) {
		t.Fatalf("first replayed: %+v", ev)
	}
	last := s2.nextEvent(t)
	if last.typ != "deleted" || last.id != hub.LastID() {
		t.Fatalf("second replayed: %+v", last)
	}
	hub.Publish(api.SSEResource, api.ResourceSummary{Name: "live"})
	if ev := s2.nextEvent(t); !strings.Contains(ev.data, `"live"`) {
		t.Fatalf("live after replay: %+v", ev)
	}
	// An id from another run of the daemon: a fresh snapshot.
	s3 := openSSE(t, a, "/api/v1/events", "0000-99")
	if ev := s3.nextEvent(t); ev.typ != "snapshot" {
		t.Fatalf("unknown id: %+v", ev)
	}
	// Logging out ends the streams at the next keep-alive.
	a.expect(204, "POST", "/api/v1/logout", nil)
	done := make(chan struct{})
	go func() {
		for {
			if _, err := s3.br.ReadString('\n'); err != nil {
				close(done)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("stream outlived its session")
	}
}

func TestLogStreamAndRecentLines(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	e.srv.log.Info("pass finished", "resource", "VirtualMachine/app-01")
	var lines api.LogLines
	json.Unmarshal(a.expect(200, "GET", "/api/v1/logs?limit=1", nil), &lines)
	if len(lines.Lines) != 1 || lines.Lines[0].Msg != "pass finished" || lines.Lines[0].Attrs["resource"] != "VirtualMachine/app-01" {
		t.Fatalf("logs: %+v", lines)
	}
	a.expect(400, "GET", "/api/v1/logs?limit=x", nil)
	s := openSSE(t, a, "/api/v1/logs/stream", "")
	var id string
	for { // the ring's lines first, up to the one above
		ev := s.nextEvent(t)
		if ev.typ != "log" {
			t.Fatalf("event %+v", ev)
		}
		if strings.Contains(ev.data, "pass finished") {
			id = ev.id
			break
		}
	}
	s.resp.Body.Close()
	e.srv.log.Warn("drift found", "resource", "VirtualMachine/app-02")
	s2 := openSSE(t, a, "/api/v1/logs/stream", id)
	for { // lines after id only: never the one the client already had
		ev := s2.nextEvent(t)
		if strings.Contains(ev.data, "pass finished") {
			t.Fatalf("resume replayed a line the client had: %+v", ev)
		}
		if strings.Contains(ev.data, "drift found") {
			break
		}
	}
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestWebhookSignatures(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	// No secret configured: every delivery is refused.
	none := newEnv(t)
	none.client().expect(401, "POST", "/api/v1/webhooks/github", body, "X-Hub-Signature-256", "sha256="+sign("", body))
	if none.backend.Calls() != nil {
		t.Fatal("refresh without a secret")
	}
	clock := newFakeClock()
	e := newEnv(t, func(o *Options) {
		o.Config = config.Defaults()
		o.Config.Server.WebhookSecret = "hook-secret"
		o.Now = clock.Now
	})
	c := e.client()
	cases := []struct {
		name, forge string
		hdr         []string
		want        int
	}{
		{"github good", "github", []string{"X-Hub-Signature-256", "sha256=" + sign("hook-secret", body)}, 202},
		{"github wrong secret", "github", []string{"X-Hub-Signature-256", "sha256=" + sign("other", body)}, 401},
		{"github no prefix", "github", []string{"X-Hub-Signature-256", sign("hook-secret", body)}, 401},
		{"github missing", "github", nil, 401},
		{"github ping", "github", []string{"X-Hub-Signature-256", "sha256=" + sign("hook-secret", body), "X-GitHub-Event", "ping"}, 200},
		{"gitea good", "gitea", []string{"X-Gitea-Signature", sign("hook-secret", body)}, 202},
		{"gitea tampered", "gitea", []string{"X-Gitea-Signature", sign("hook-secret", body+" ")}, 401},
		{"gitea garbage", "gitea", []string{"X-Gitea-Signature", "zz"}, 401},
		{"gitlab good", "gitlab", []string{"X-Gitlab-Token", "hook-secret"}, 202},
		{"gitlab wrong", "gitlab", []string{"X-Gitlab-Token", "hook-secre"}, 401},
		{"gitlab missing", "gitlab", nil, 401},
		{"unknown forge", "bitbucket", []string{"X-Gitlab-Token", "hook-secret"}, 404},
	}
	refreshes := 0
	for _, tc := range cases {
		clock.Advance(WebhookWindow) // each good delivery starts its own pull
		before := len(e.backend.Calls())
		resp, b := c.req("POST", "/api/v1/webhooks/"+tc.forge, body, tc.hdr...)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, resp.StatusCode, tc.want, b)
		}
		got := len(e.backend.Calls()) - before
		if (tc.want == 202) != (got == 1) {
			t.Errorf("%s: %d backend calls", tc.name, got)
		}
		refreshes += got
	}
	if refreshes != 3 {
		t.Fatalf("refreshes: %d", refreshes)
	}
	if n := strings.Count(e.logText(), "webhook rejected"); n != 7 {
		t.Fatalf("%d rejections logged, want 7", n)
	}
	if !strings.Contains(none.logText(), "no webhook secret is configured") {
		t.Fatal("the refusal without a secret is not logged")
	}
	if strings.Contains(e.logText(), "hook-secret") {
		t.Fatal("webhook secret in the log")
	}
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

func TestServeTLSAndGracefulShutdown(t *testing.T) {
	certFile, keyFile := selfSigned(t, t.TempDir())
	e := newEnv(t, func(o *Options) { o.TLSCertFile, o.TLSKeyFile = certFile, keyFile })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + ln.Addr().String()
	resp, err := hc.Post(base+"/api/v1/setup", "application/json",
		strings.NewReader(`{"token":"`+e.setupToken+`","username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || !resp.Cookies()[0].Secure || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("over TLS: %s, cookie %+v", resp.Status, resp.Cookies())
	}
	// An open SSE stream does not hold up shutdown.
	req, _ := http.NewRequest("GET", base+"/api/v1/events", nil)
	req.AddCookie(resp.Cookies()[0])
	stream, err := (&http.Client{Transport: hc.Transport}).Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	// Plain HTTP is not served on a TLS listener; a bad cert is an error.
	e2 := newEnv(t, func(o *Options) { o.TLSCertFile, o.TLSKeyFile = keyFile, certFile })
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := e2.srv.Serve(context.Background(), ln2); err == nil || !strings.Contains(err.Error(), "TLS certificate") {
		t.Fatalf("bad certificate: %v", err)
	}
}

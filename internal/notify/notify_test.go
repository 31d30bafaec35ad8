package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
)

// received is one request a receiver got.
type received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// recorder is a receiver on loopback: it records every request and answers
// with the next of its statuses (200 when they run out).
type recorder struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
}

func newRecorder(t *testing.T, statuses ...int) *recorder {
	r := &recorder{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: b})
		code := http.StatusOK
		if len(r.statuses) > 0 {
			code, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
		if code != http.StatusOK {
			io.WriteString(w, "receiver says no: "+req.URL.Path)
			return
		}
		io.WriteString(w, `{"id":"x"}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func decodeBody(t *testing.T, b []byte) api.NotificationBody {
	t.Helper()
	var body api.NotificationBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return body
}

func fastOptions() Options {
	return Options{Window: 50 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, PublicURL: "https://proxmops.lan/"}
}

func TestBurstGoesOutAsOneMessagePerReceiver(t *testing.T) {
	a, b := newRecorder(t), newRecorder(t)
	d := New([]config.Notification{
		{Name: "a", URL: a.srv.URL + "/hook", On: []string{"failed", "drift"}},
		{Name: "b", URL: b.srv.URL + "/hook", On: []string{"failed"}},
	}, fastOptions())
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Cluster: "default", Kind: "VirtualMachine", Name: "web", Revision: "0123456789abcdef", Message: "create failed: boom"})
	d.Notify(api.Notice{Event: api.NotifyDrift, Cluster: "default", Kind: "Container", Name: "db", Message: "differs"})
	d.Notify(api.Notice{Event: api.NotifyFailed, Cluster: "default", Kind: "VirtualMachine", Name: "api", Message: "update failed"})
	testwait.For(t, "both receivers", 10*time.Second, func() bool { return len(a.requests()) == 1 && len(b.requests()) == 1 })
	testwait.For(t, "the statuses", 10*time.Second, func() bool { st := d.Status(); return st[0].Delivered == 1 && st[1].Delivered == 1 })

	got := a.requests()[0]
	if got.Method != http.MethodPost || got.Path != "/hook" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request = %s %s %q", got.Method, got.Path, got.Header.Get("Content-Type"))
	}
	body := decodeBody(t, got.Body)
	if body.Receiver != "a" || len(body.Events) != 3 {
		t.Fatalf("receiver a got %+v", body)
	}
	first := body.Events[0]
	if first.Event != api.NotifyFailed || first.Kind != "VirtualMachine" || first.Name != "web" || first.Cluster != "default" ||
		first.Revision != "0123456789abcdef" || first.Message != "create failed: boom" || first.Time.IsZero() ||
		first.Link != "https://proxmops.lan/?r=VirtualMachine%2Fweb" {
		t.Errorf("first event = %+v", first)
	}
	if !strings.Contains(body.Text, "VirtualMachine/web failed: create failed: boom (revision 0123456789ab)") {
		t.Errorf("text = %q", body.Text)
	}
	if bb := decodeBody(t, b.requests()[0].Body); len(bb.Events) != 2 {
		t.Errorf("receiver b (failed only) got %+v", bb.Events)
	}
	// A later transition is a message of its own.
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "again"})
	testwait.For(t, "the second message", 10*time.Second, func() bool { return len(a.requests()) == 2 })
}

func TestReceiverFailingTwiceGetsTheMessageOnTheThirdTry(t *testing.T) {
	rec := newRecorder(t, http.StatusServiceUnavailable, http.StatusBadGateway)
	opts := fastOptions()
	// A retry waits long enough for the status between tries to be seen.
	opts.Backoff = 300 * time.Millisecond
	d := New([]config.Notification{{Name: "ops", URL: rec.srv.URL + "/hook", On: []string{"failed"}}}, opts)
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the first error", 10*time.Second, func() bool { return d.Status()[0].LastError != "" })
	st := d.Status()[0]
	if !strings.Contains(st.LastError, "503 Service Unavailable: receiver says no: /hook") || st.LastDelivery != nil || st.Pending != 1 {
		t.Errorf("status after the first try = %+v", st)
	}
	testwait.For(t, "the delivery", 10*time.Second, func() bool { return d.Status()[0].Delivered == 1 })
	st = d.Status()[0]
	if n := len(rec.requests()); n != 3 {
		t.Errorf("requests = %d, want 3 (two failures, one success)", n)
	}
	if !strings.Contains(st.LastError, "502 Bad Gateway") || st.LastDelivery == nil || st.LastDelivery.Before(*st.LastErrorAt) || st.Failed != 0 || st.Pending != 0 {
		t.Errorf("status after the success = %+v", st)
	}
	for _, r := range rec.requests() {
		if len(decodeBody(t, r.Body).Events) != 1 {
			t.Errorf("a retry carries the same message: %s", r.Body)
		}
	}
}

func TestDeliveryGivesUpAfterTheLastAttempt(t *testing.T) {
	rec := newRecorder(t, 500, 500, 500, 500, 500)
	opts := fastOptions()
	opts.Attempts = 3
	d := New([]config.Notification{{Name: "ops", URL: rec.srv.URL, On: []string{"failed"}}}, opts)
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "giving up", 10*time.Second, func() bool { return d.Status()[0].Failed == 1 })
	if n := len(rec.requests()); n != 3 {
		t.Errorf("requests = %d, want 3 attempts", n)
	}
	if st := d.Status()[0]; st.Delivered != 0 || st.Pending != 0 || st.LastError == "" {
		t.Errorf("status = %+v", st)
	}
}

func TestNtfyServiceURLDeliversInNtfyShape(t *testing.T) {
	rec := newRecorder(t)
	host := strings.TrimPrefix(rec.srv.URL, "http://")
	d := New([]config.Notification{{Name: "phone", URL: "ntfy://" + host + "/homelab-alerts?scheme=http&priority=high", On: []string{"failed"}}}, fastOptions())
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Cluster: "default", Kind: "VirtualMachine", Name: "web", Message: "create failed: boom"})
	testwait.For(t, "the ntfy message", 10*time.Second, func() bool { return len(rec.requests()) == 1 })
	got := rec.requests()[0]
	// ntfy's publish API: POST /<topic>, the message as the body, the
	// title and priority as headers (docs.ntfy.sh/publish).
	if got.Method != http.MethodPost || got.Path != "/homelab-alerts" {
		t.Errorf("request = %s %s", got.Method, got.Path)
	}
	if title := got.Header.Get("Title"); title != "proxmops: VirtualMachine/web failed" {
		t.Errorf("Title = %q", title)
	}
	if p := got.Header.Get("Priority"); p != "4" && !strings.EqualFold(p, "high") {
		t.Errorf("Priority = %q", p)
	}
	if !strings.HasPrefix(string(got.Body), "create failed: boom\nhttps://proxmops.lan/?r=VirtualMachine%2Fweb") {
		t.Errorf("body = %q", got.Body)
	}
	testwait.For(t, "the status", 10*time.Second, func() bool { return d.Status()[0].Delivered == 1 })
	if st := d.Status()[0]; st.Service != "ntfy" || st.URL != "ntfy://"+host+"/…" {
		t.Errorf("status = %+v", st)
	}
}

func TestEventsAndSelectorsChooseTheReceivers(t *testing.T) {
	rec := newRecorder(t)
	d := New([]config.Notification{{Name: "web", URL: rec.srv.URL, On: []string{"failed", "source-error"}, Resources: []string{"VirtualMachine/web-*", "*/db"}}}, fastOptions())
	defer d.Close()
	for _, n := range []api.Notice{
		{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web-1", Message: "taken"},
		{Event: api.NotifyFailed, Kind: "Container", Name: "db", Message: "taken"},
		{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "api", Message: "not selected"},
		{Event: api.NotifyDrift, Kind: "VirtualMachine", Name: "web-1", Message: "not an event it takes"},
		{Event: api.NotifySourceError, Message: "taken: no resource, no selector applies"},
	} {
		d.Notify(n)
	}
	testwait.For(t, "the message", 10*time.Second, func() bool { return len(rec.requests()) == 1 })
	body := decodeBody(t, rec.requests()[0].Body)
	if len(body.Events) != 3 {
		t.Fatalf("events = %+v", body.Events)
	}
	for _, e := range body.Events {
		if !strings.HasPrefix(e.Message, "taken") {
			t.Errorf("delivered %+v", e)
		}
	}
}

func TestSecretReferencesAreReadAtDeliveryAndNeverShown(t *testing.T) {
	rec := newRecorder(t, http.StatusForbidden)
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("s3cr3t-t0ken-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROXMOPS_TEST_HOOK_USER", "hookuser")
	d := New([]config.Notification{{Name: "ops", URL: strings.Replace(rec.srv.URL, "http://", "http://${env:PROXMOPS_TEST_HOOK_USER}@", 1) + "/hooks/${file:" + secret + "}", On: []string{"failed"}}}, fastOptions())
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "two tries", 10*time.Second, func() bool { return len(rec.requests()) == 2 })
	if p := rec.requests()[0].Path; p != "/hooks/s3cr3t-t0ken-from-file" {
		t.Errorf("path = %q: the file's secret, without its newline", p)
	}
	if h := rec.requests()[0].Header.Get("Authorization"); !strings.HasPrefix(h, "Basic ") {
		t.Errorf("Authorization = %q: the user from the environment", h)
	}
	st := d.Status()[0]
	if !strings.Contains(st.LastError, "403") || strings.Contains(st.LastError, "s3cr3t") {
		t.Errorf("last error = %q: the receiver's answer, the secret scrubbed", st.LastError)
	}
	if strings.Contains(st.URL, "s3cr3t") || strings.Contains(st.URL, "hookuser") || strings.Contains(st.URL, "${") {
		t.Errorf("url = %q", st.URL)
	}
}

func TestMissingSecretIsTheReceiversError(t *testing.T) {
	rec := newRecorder(t)
	opts := fastOptions()
	opts.Attempts = 1
	d := New([]config.Notification{{Name: "ops", URL: rec.srv.URL + "/${env:PROXMOPS_TEST_NOT_SET}", On: []string{"failed"}}}, opts)
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the failure", 10*time.Second, func() bool { return d.Status()[0].Failed == 1 })
	if st := d.Status()[0]; !strings.Contains(st.LastError, "environment variable PROXMOPS_TEST_NOT_SET is not set") || len(rec.requests()) != 0 {
		t.Errorf("status = %+v, requests %d", st, len(rec.requests()))
	}
}

func TestUnknownServiceIsShownFromTheStart(t *testing.T) {
	d := New([]config.Notification{{Name: "x", URL: "nosuch://h/x", On: []string{"failed"}}}, fastOptions())
	defer d.Close()
	if st := d.Status()[0]; !strings.Contains(st.LastError, `unknown notification service "nosuch"`) {
		t.Errorf("status = %+v", st)
	}
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the message given up", 10*time.Second, func() bool { return d.Status()[0].Failed == 1 })
	if st := d.Status()[0]; st.Pending != 0 || !strings.Contains(st.LastError, "nosuch") {
		t.Errorf("status = %+v", st)
	}
}

func TestPRPlanNoticeReachesReceiversOfPRPlan(t *testing.T) {
	rec := newRecorder(t)
	d := New([]config.Notification{{Name: "review", URL: rec.srv.URL, On: []string{"pr-plan"}, Resources: []string{"VirtualMachine/web"}}}, fastOptions())
	defer d.Close()
	var n Notifier = d
	n.Notify(PRPlanNotice("default", 12, "bigger web", "abc123", "1 to update, 0 to create", "https://forge/pr/12"))
	testwait.For(t, "the message", 10*time.Second, func() bool { return len(rec.requests()) == 1 })
	e := decodeBody(t, rec.requests()[0].Body).Events[0]
	if e.Event != api.NotifyPRPlan || e.PullRequest != 12 || e.Revision != "abc123" || e.Message != "bigger web: 1 to update, 0 to create" || e.Link != "https://forge/pr/12" {
		t.Errorf("event = %+v", e)
	}
}

func TestConfigureKeepsAnUnchangedReceiversStatus(t *testing.T) {
	rec := newRecorder(t)
	list := []config.Notification{{Name: "ops", URL: rec.srv.URL, On: []string{"failed"}}}
	d := New(list, fastOptions())
	defer d.Close()
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the delivery", 10*time.Second, func() bool { return d.Status()[0].Delivered == 1 })
	d.Configure(append(list, config.Notification{Name: "more", URL: rec.srv.URL, On: []string{"drift"}}))
	if st := d.Status(); len(st) != 2 || st[0].Delivered != 1 || st[1].Name != "more" {
		t.Errorf("status = %+v", st)
	}
}

func TestEveryServiceSchemeTheConfigAcceptsIsDeliverable(t *testing.T) {
	for _, scheme := range config.NotificationSchemes {
		if _, service, err := newSender(scheme+"://host/x", nil); err != nil {
			t.Errorf("config accepts %s:// but delivery does not: %v", scheme, err)
		} else if scheme != "http" && scheme != "https" && service != scheme {
			t.Errorf("%s:// is delivered as %q", scheme, service)
		}
	}
}

func TestStatusOutlivesARestartOnTheStore(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "proxmops.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := newRecorder(t, http.StatusBadGateway)
	list := []config.Notification{{Name: "ops", URL: rec.srv.URL + "/hook", On: []string{"failed"}}}
	opts := fastOptions()
	opts.State = st
	d := New(list, opts)
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the delivery", 10*time.Second, func() bool { return d.Status()[0].Delivered == 1 })
	before := d.Status()[0]
	d.Close()

	again := New(list, opts)
	defer again.Close()
	after := again.Status()[0]
	if after.Delivered != 1 || after.LastDelivery == nil || !after.LastDelivery.Equal(*before.LastDelivery) || !strings.Contains(after.LastError, "502") {
		t.Errorf("after the restart: %+v, before %+v", after, before)
	}
	// Another URL under the same name is another receiver.
	moved := New([]config.Notification{{Name: "ops", URL: "https://elsewhere.example/hook", On: []string{"failed"}}}, opts)
	defer moved.Close()
	if st := moved.Status()[0]; st.Delivered != 0 || st.LastError != "" {
		t.Errorf("a changed URL kept the old status: %+v", st)
	}
}

func TestShutdownDeliversWhatIsStillInItsWindow(t *testing.T) {
	rec := newRecorder(t, http.StatusServiceUnavailable)
	opts := fastOptions()
	// A window longer than the test: only Shutdown can end it.
	opts.Window = time.Hour
	d := New([]config.Notification{{Name: "ops", URL: rec.srv.URL + "/hook", On: []string{"failed"}}}, opts)
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	d.Shutdown(t.Context())
	got := rec.requests()
	if len(got) != 2 {
		t.Fatalf("requests = %d, want 2 (a refusal, then the retry that delivers)", len(got))
	}
	if body := decodeBody(t, got[1].Body); len(body.Events) != 1 || body.Events[0].Name != "web" {
		t.Errorf("delivered %+v", body.Events)
	}
	if st := d.Status()[0]; st.Delivered != 1 || st.Pending != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestShutdownGivesUpWhenItsTimeEnds(t *testing.T) {
	rec := newRecorder(t, 500, 500, 500, 500, 500)
	opts := fastOptions()
	opts.Window = time.Hour
	opts.Backoff, opts.MaxBackoff = time.Hour, time.Hour
	d := New([]config.Notification{{Name: "ops", URL: rec.srv.URL + "/hook", On: []string{"failed"}}}, opts)
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		d.Shutdown(ctx)
		close(done)
	}()
	// The first try fails and the retry would wait an hour: ending the
	// shutdown's time stops it.
	testwait.For(t, "the first try", 10*time.Second, func() bool { return len(rec.requests()) == 1 })
	cancel()
	<-done
	if n := len(rec.requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

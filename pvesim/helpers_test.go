package pvesim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testTokenID     = "root@pam!proxmops"
	testTokenSecret = "s3cret"
)

// startSim starts a simulator on loopback for one test.
func startSim(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.TokenID == "" {
		opts.TokenID, opts.TokenSecret = testTokenID, testTokenSecret
	}
	srv := New(opts)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// apiResp is a decoded answer.
type apiResp struct {
	Status  int
	Reason  string
	Body    []byte
	Data    json.RawMessage
	Errors  map[string]string
	Message string
	Total   *int
}

// requestCase is a request and the answer it gets: its status, reason
// and the parameter errors named.
type requestCase struct {
	name, method, path string
	params             url.Values
	status             int
	reason             string
	errors             map[string]string
}

// paramsCase is a request's parameters and the answer they get, for a
// test that sends them all to one path.
type paramsCase struct {
	name   string
	params url.Values
	status int
	reason string
	errors map[string]string
}

// newSim starts a simulator with opts and returns it with a client of it.
func newSim(t testing.TB, opts Options) (*Server, *client) {
	t.Helper()
	srv := startSim(t, opts)
	return srv, newClient(t, srv)
}

// clockedSim is a simulator whose tasks take their real durations on a
// fake clock the test advances, and a client of it.
func clockedSim(t testing.TB) (*Server, *client, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := newSim(t, Options{TaskSpeed: 1, Clock: clock})
	return srv, c, clock
}

// waitSleepers waits until n tasks sleep on the fake clock, failing the
// test with what when they do not within 5 s.
func waitSleepers(t testing.TB, clock *FakeClock, n int, what string) {
	t.Helper()
	if !clock.WaitForWaiters(n, 5*time.Second) {
		t.Fatal(what)
	}
}

// mustTaskOK sends a request that starts a task and fails the test unless
// the task ends OK.
func mustTaskOK(t testing.TB, c *client, method, path string, params url.Values) {
	t.Helper()
	if st := c.task(method, path, params); st != "OK" {
		t.Fatalf("%s %s: %s", method, path, st)
	}
}

// mustAddGuest adds a guest to the simulator's state, failing the test
// when it cannot.
func mustAddGuest(t testing.TB, srv *Server, g GuestSpec) {
	t.Helper()
	if err := srv.AddGuest(g); err != nil {
		t.Fatal(err)
	}
}

// mustAddVolume adds a volume to the simulator's state, failing the test
// when it cannot.
func mustAddVolume(t testing.TB, srv *Server, v VolumeSpec) {
	t.Helper()
	if err := srv.AddVolume(v); err != nil {
		t.Fatal(err)
	}
}

// privCase is a request from a token that lacks the missing privileges,
// and the answer it gets.
type privCase struct {
	name         string
	missing      []string
	method, path string
	params       url.Values
	status       int
	reason       string
}

// wantPrivRefusals sends each case's request to a simulator sim starts
// for a token holding every privilege but the case's missing ones.
func wantPrivRefusals(t *testing.T, tests []privCase, sim func(t *testing.T, privs []string) *client) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim(t, allBut(tt.missing...)).do(tt.method, tt.path, tt.params).want(t, tt.status, tt.reason, nil)
		})
	}
}

// paramErrorCase is a request refused in parameter verification: the
// parameters sent and the one parameter error the answer must name.
type paramErrorCase struct {
	name     string
	params   url.Values
	key, msg string
}

// wantParamErrors posts each case's parameters to path and checks the
// answer is 400 "Parameter verification failed." with the case's message
// on its parameter.
func wantParamErrors(t *testing.T, c *client, path string, tests []paramErrorCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do("POST", path, tt.params)
			if r.Status != 400 || r.Reason != "Parameter verification failed." {
				t.Fatalf("got %d %q: %s", r.Status, r.Reason, r.Body)
			}
			if got := r.Errors[tt.key]; got != tt.msg {
				t.Fatalf("errors[%s] = %q, want %q (all: %v)", tt.key, got, tt.msg, r.Errors)
			}
		})
	}
}

// want checks an answer's status and reason, and the parameter errors
// named in errors (others are not looked at).
func (r apiResp) want(t testing.TB, status int, reason string, errors map[string]string) {
	t.Helper()
	if r.Status != status || r.Reason != reason {
		t.Fatalf("%d %q, want %d %q (%s)", r.Status, r.Reason, status, reason, r.Body)
	}
	for k, v := range errors {
		if r.Errors[k] != v {
			t.Errorf("errors[%s] = %q, want %q", k, r.Errors[k], v)
		}
	}
}

func (r apiResp) str(t testing.TB) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(r.Data, &s); err != nil {
		t.Fatalf("data is not a string: %s", r.Data)
	}
	return s
}

func (r apiResp) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Data, &m); err != nil {
		t.Fatalf("data is not an object: %s", r.Data)
	}
	return m
}

func (r apiResp) list(t testing.TB) []map[string]any {
	t.Helper()
	var m []map[string]any
	if err := json.Unmarshal(r.Data, &m); err != nil {
		t.Fatalf("data is not a list: %s", r.Data)
	}
	return m
}

type client struct {
	t      testing.TB
	srv    *Server
	hc     *http.Client
	header http.Header
}

func newClient(t testing.TB, srv *Server) *client {
	h := http.Header{}
	h.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
	return &client{t: t, srv: srv, hc: &http.Client{Timeout: 30 * time.Second}, header: h}
}

// do sends a request; params go in the query for GET/DELETE and as a form body otherwise.
func (c *client) do(method, path string, params url.Values) apiResp {
	c.t.Helper()
	u := c.srv.APIURL() + path
	var body io.Reader
	if params != nil && (method == "GET" || method == "DELETE") {
		u += "?" + params.Encode()
	} else if params != nil {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return c.send(req)
}

func (c *client) send(req *http.Request) apiResp {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := apiResp{Status: resp.StatusCode, Reason: strings.TrimPrefix(resp.Status, resp.Status[:4]), Body: b}
	var env struct {
		Data    json.RawMessage   `json:"data"`
		Errors  map[string]string `json:"errors"`
		Message string            `json:"message"`
		Total   *int              `json:"total"`
	}
	if json.Unmarshal(b, &env) == nil {
		r.Data, r.Errors, r.Message, r.Total = env.Data, env.Errors, env.Message, env.Total
	}
	return r
}

func (c *client) mustOK(method, path string, params url.Values) apiResp {
	c.t.Helper()
	r := c.do(method, path, params)
	if r.Status != 200 {
		c.t.Fatalf("%s %s %v: %d %s %s", method, path, params, r.Status, r.Reason, r.Body)
	}
	return r
}

// waitTask waits for a UPID's task and returns its exit status.
func (c *client) waitTask(upid string) string {
	c.t.Helper()
	info, ok := ParseUPID(upid)
	if !ok {
		c.t.Fatalf("bad UPID %q", upid)
	}
	for i := 0; i < 2000; i++ {
		st := c.mustOK("GET", "/nodes/"+info.Node+"/tasks/"+url.PathEscape(upid)+"/status", nil).obj(c.t)
		if st["status"] == "stopped" {
			return st["exitstatus"].(string)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("task %s did not finish", upid)
	return ""
}

// task runs an asynchronous call and waits for it.
func (c *client) task(method, path string, params url.Values) string {
	c.t.Helper()
	return c.waitTask(c.mustOK(method, path, params).str(c.t))
}

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func newRawRequest(method, u string) (*http.Request, error) { return http.NewRequest(method, u, nil) }

// reloaded saves srv's state to a file and loads it into a fresh simulator,
// as a restarted pvesim would.
func reloaded(t testing.TB, srv *Server) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	if err := srv.SaveState(path); err != nil {
		t.Fatal(err)
	}
	again := startSim(t, Options{})
	if err := again.LoadState(path); err != nil {
		t.Fatal(err)
	}
	return again
}

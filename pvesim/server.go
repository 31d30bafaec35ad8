package pvesim

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxmops/proxmops/pvesim/guestssh"
	"github.com/proxmops/proxmops/pvesim/route"
)

// Options configure a simulated cluster.
type Options struct {
	// Nodes is the number of cluster nodes, named pve1..pveN (default 3).
	Nodes int
	// TokenID and TokenSecret form the API token accepted in
	// "Authorization: PVEAPIToken=TokenID=TokenSecret" (e.g. "root@pam!proxmops").
	TokenID     string
	TokenSecret string
	// RootPassword enables ticket login for root@pam when set.
	RootPassword string
	// TaskSpeed scales task durations and lock waits: 1 is realistic,
	// 0 makes every task finish before its UPID is returned.
	TaskSpeed float64
	// Seed makes generated values (MACs, UUIDs) and injected faults reproducible.
	Seed int64
	// Clock replaces the wall clock (tests use a FakeClock).
	Clock Clock
	// Faults to inject from the start (see ParseFaults).
	Faults Faults
	// AuthFailureDelay delays 401 answers (Proxmox waits 3 seconds).
	AuthFailureDelay time.Duration
	// StatusInterval is how often the simulated pvestatd reports guest
	// figures (name, status, template, sizes, uptime) into
	// /cluster/resources, on the simulator's clock and independent of
	// TaskSpeed: 0 means Proxmox's 10 seconds, a negative value turns the
	// lag off (every answer is current). See statd.go.
	StatusInterval time.Duration
	// Version is the reported Proxmox VE version (default "9.1.3").
	Version string
	// AllowRemoteDownloads lets download-url fetch from any address. By
	// default the simulator downloads only from loopback addresses, so a
	// test or a demo can never reach out to the network by accident.
	AllowRemoteDownloads bool
	// TaskIndexBytes is the size at which a node's task index rotates
	// (default 50000, pve-common RESTEnvironment.pm): finished tasks are
	// listed from the index and the previous one only, about 1,000 to
	// 2,000 tasks; older ones keep their status and log.
	TaskIndexBytes int
	// TokenPrivileges, when not nil, makes the API token privilege-separated
	// with exactly these privileges on "/" (propagated); unknown names are
	// ignored (see ParsePrivilegeList). nil grants the token its user's
	// privileges: all of them for a token of root@pam.
	TokenPrivileges []string
	// GuestSSHPort, when not 0, gives every running guest whose NIC has a
	// static address in 127.0.0.0/8 an SSH server on <address>:GuestSSHPort
	// (see guestssh.go and docs/pvesim.md).
	GuestSSHPort int
	// GuestRoot is the folder holding the guests' files, guest G's under
	// GuestRoot/G (default: a temporary folder removed at Close).
	GuestRoot string
	// AgentStartDelay is how long after a VM starts its guest agent
	// answers (when its config enables one): 0 means
	// DefaultAgentStartDelay, a negative value at once. See agent.go.
	AgentStartDelay time.Duration
}

// Server is a simulated Proxmox VE cluster speaking the HTTP API.
type Server struct {
	opts   Options
	clock  Clock
	routes *router

	mu       sync.Mutex // guards everything below, and all cluster state
	rng      *rand.Rand
	state    *clusterState
	tasks    *taskTable
	locks    map[int]*guestLock
	tickets  *ticketKeys
	counters map[string]int64
	faults   faultState
	resCache resourcesCache
	statd    statd
	access   *accessState
	gssh     *guestssh.Manager // nil when guest SSH is off

	// gen counts state changes (see touch); cached answers are built for one generation.
	gen atomic.Uint64

	// The HA manager: a round is scheduled (haScheduled), or runs at once
	// with TaskSpeed 0 (haSyncRunning; haSyncAgain asks for another pass).
	haScheduled, haSyncRunning, haSyncAgain bool

	httpSrv     *http.Server
	listener    net.Listener
	url         string
	fingerprint string
	serveDone   chan struct{}
	bgWG        sync.WaitGroup
	closed      chan struct{}
}

// New builds a simulated cluster. Serve it with Start/StartTLS, or use
// Handler() directly.
func New(opts Options) *Server {
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	if opts.Version == "" {
		opts.Version = "9.1.3"
	}
	if opts.TaskSpeed < 0 {
		opts.TaskSpeed = 0
	}
	s := &Server{
		opts:     opts,
		clock:    opts.Clock,
		routes:   newRouter(),
		rng:      rand.New(rand.NewSource(opts.Seed)),
		locks:    map[int]*guestLock{},
		counters: map[string]int64{},
		closed:   make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	s.tickets = newTicketKeys(s.rng)
	s.access = newAccessState(opts)
	s.tasks = newTaskTable()
	s.gssh = newGuestSSH(opts)
	s.state = newClusterState(opts.Nodes, s.clock.Now())
	if opts.StatusInterval == 0 {
		opts.StatusInterval = DefaultStatusInterval
		s.opts.StatusInterval = opts.StatusInterval
	}
	s.statd.init(opts.StatusInterval, s.clock.Now())
	s.faults.set(opts.Faults, opts.Seed)
	for _, reg := range routeRegistrations {
		reg(s)
	}
	return s
}

// routeRegistrations are the functions that add the endpoints; each file
// serving a part of the API appends one in its init function.
var routeRegistrations []func(*Server)

// registerRoutes adds a route group; call it from an init function.
func registerRoutes(f func(*Server)) { routeRegistrations = append(routeRegistrations, f) }

// Handle adds a route. It panics on a duplicate, which is a programming error.
func (s *Server) Handle(r *route.Route) {
	if r.Params == nil {
		r.Params = route.NewParams()
	}
	s.routes.add(r)
}

// Routes lists every served method, for conformance tests.
func (s *Server) Routes() []*route.Route { return append([]*route.Route(nil), s.routes.all...) }

// Start serves plain HTTP on addr (use "127.0.0.1:0" in tests).
func (s *Server) Start(addr string) error { return s.start(addr, false) }

// StartTLS serves HTTPS with a freshly generated self-signed certificate.
func (s *Server) StartTLS(addr string) error { return s.start(addr, true) }

func (s *Server) start(addr string, useTLS bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := s.startGuestSSH(); err != nil {
		ln.Close()
		return err
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		// pveproxy speaks HTTP/1.1 only; an empty map keeps HTTP/2 off.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     nil,
	}
	scheme := "http"
	if useTLS {
		cert, fp, err := selfSignedCert(ln.Addr())
		if err != nil {
			ln.Close()
			return err
		}
		s.fingerprint = fp
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	s.listener = ln
	s.url = scheme + "://" + ln.Addr().String()
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		_ = s.httpSrv.Serve(ln)
	}()
	return nil
}

// URL is the server's base address, e.g. "https://127.0.0.1:8006".
func (s *Server) URL() string { return s.url }

// APIURL is URL plus "/api2/json".
func (s *Server) APIURL() string { return s.url + "/api2/json" }

// Fingerprint is the SHA-256 fingerprint of the TLS certificate, as
// colon-separated upper-case hex (empty for plain HTTP).
func (s *Server) Fingerprint() string { return s.fingerprint }

// Close stops serving and waits for running tasks to stop.
func (s *Server) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	s.closeGuestSSH()
	var err error
	if s.httpSrv != nil {
		err = s.httpSrv.Close()
		<-s.serveDone
	}
	s.bgWG.Wait()
	return err
}

const apiBase = "/api2/json"

// maxPostSize is pve-http-server's limit for non-upload bodies.
const maxPostSize = 64 * 1024

// ServeHTTP implements http.Handler: pve-http-server's steps in order,
// the route, the injected latency, authentication, the parameters, the
// token and permission checks, the injected error, the node's reach, the
// parameter schema, then the handler under the server's lock.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if strings.HasPrefix(hr.URL.Path, "/_sim/") {
		s.serveSim(w, hr)
		return
	}
	rel, ok := apiPath(hr.URL.Path)
	if !ok {
		writeError(w, &route.APIError{Status: 501, Message: "no such uri", PlainBody: true})
		return
	}
	rt, uriParams, template := s.routes.match(hr.Method, rel)
	s.count(hr.Method, template, rel)

	if d := s.faults.latencyFor(rt, hr.Method, rel); d > 0 {
		select {
		case <-time.After(d):
		case <-hr.Context().Done():
			return
		}
	}

	auth, aerr := s.authenticate(hr, rel)
	if aerr != nil {
		if s.opts.AuthFailureDelay > 0 {
			time.Sleep(s.opts.AuthFailureDelay)
		}
		writeError(w, aerr)
		return
	}
	raw, upload, perr := requestParams(hr, auth.isUpload, rt, rel, uriParams)
	if upload != nil {
		defer removeUpload(upload)
	}
	if perr != nil {
		writeError(w, perr)
		return
	}
	if err := s.authorize(rt, auth, rel, raw); err != nil {
		writeError(w, err)
		return
	}
	if fe := s.faults.errorFor(rt, hr.Method, rel); fe != nil {
		writeError(w, fe)
		return
	}

	req := &route.Request{Method: hr.Method, Path: rel, Template: template, Route: rt, User: auth.user, IsToken: auth.isToken, HTTP: hr, Upload: upload}
	if rt.ProxyTo != "" {
		node := uriParams[rt.ProxyTo]
		if err := s.checkNodeReachable(node); err != nil {
			writeError(w, route.AsAPIError(err))
			return
		}
	}
	params, verrs := validateParams(rt.Params, raw)
	if verrs != nil {
		writeError(w, route.AsAPIError(route.ParamError(verrs)))
		return
	}
	req.Params = params
	data, err := s.handle(rt, req)

	if s.faults.dropFor(rt, hr.Method, rel) {
		dropConnection(w)
		return
	}
	if err != nil {
		writeError(w, route.AsAPIError(err))
		return
	}
	writeData(w, data)
}

// apiPath is a request path relative to /api2/json ("/" for the base
// itself); ok is false for any other path.
func apiPath(path string) (rel string, ok bool) {
	if !strings.HasPrefix(path, "/api2/") {
		return "", false
	}
	if path != apiBase && !strings.HasPrefix(path, apiBase+"/") {
		return "", false
	}
	rel = strings.TrimPrefix(path, apiBase)
	if rel == "" {
		rel = "/"
	}
	return rel, true
}

// requestParams reads the request's parameters (body or query) and adds
// the path's: a body is refused on methods other than POST and PUT, an
// unknown route answers 501 once the body is read, and a parameter given
// in both the path and the body must agree. An upload is returned for the
// caller to remove whenever one was read.
func requestParams(hr *http.Request, isUpload bool, rt *route.Route, rel string, uriParams map[string]string) (map[string]rawValue, *route.Upload, *route.APIError) {
	if hr.ContentLength > 0 || (hr.ContentLength < 0 && len(hr.TransferEncoding) > 0) {
		if hr.Method != "POST" && hr.Method != "PUT" {
			return nil, nil, &route.APIError{Status: 501, Message: fmt.Sprintf("Unexpected content for method '%s'", hr.Method), PlainBody: true}
		}
	}
	raw, upload, perr := extractParams(hr, isUpload)
	if perr != nil {
		return nil, nil, perr
	}
	delete(raw, "_dc")
	if rt == nil {
		return nil, upload, &route.APIError{Status: 501, Message: fmt.Sprintf("Method '%s %s' not implemented", hr.Method, rel)}
	}
	for _, k := range sortedKeys(raw) {
		if uv, ok := uriParams[k]; ok && (raw[k].kind != vString || raw[k].s != uv) {
			return nil, upload, route.AsAPIError(route.ParamErr(k, "duplicate parameter (already defined in URI) with conflicting values!"))
		}
	}
	for k, v := range uriParams {
		raw[k] = rawValue{s: v}
	}
	return raw, upload, nil
}

// authorize refuses an API token on a route that needs a ticket, then
// checks the route's permissions with the request's parameters.
func (s *Server) authorize(rt *route.Route, auth authInfo, rel string, raw map[string]rawValue) *route.APIError {
	if auth.isToken && rt.NoToken {
		return &route.APIError{Status: 403, Message: fmt.Sprintf("Permission check failed (URI '%s' not available with API token, need proper ticket.)\n", rel)}
	}
	if rt.Unauthenticated {
		return nil
	}
	flat := make(map[string]string, len(raw))
	for k, v := range raw {
		flat[k] = v.s
	}
	s.mu.Lock()
	err := s.checkAPI2Permissions(rt.Perm, auth.user, flat)
	s.mu.Unlock()
	if err != nil {
		return route.AsAPIError(err)
	}
	return nil
}

// handle runs the route's handler under the server's lock, after the
// status daemon's catch-up; a write counts as a change and brings the
// guests' SSH servers in line.
func (s *Server) handle(rt *route.Route, req *route.Request) (any, error) {
	s.mu.Lock()
	s.statdCatchUp()
	if req.Method != "GET" {
		s.touch()
	}
	data, err := rt.Handler(req)
	if req.Method != "GET" {
		s.guestSSHSync()
	}
	s.mu.Unlock()
	return data, err
}

// Result lets a handler add "total" (or "changes") next to "data".
type Result struct {
	Data    any
	Total   *int
	Changes string
}

// encodedBody is a whole answer, already encoded ({"data":...}).
type encodedBody []byte

// touch marks a change of the cluster state: everything that may change
// what a GET answers calls it (writes, task steps, the Go API, faults), so
// cached answers are rebuilt.
func (s *Server) touch() { s.gen.Add(1) }

func writeData(w http.ResponseWriter, data any) {
	if b, ok := data.(encodedBody); ok {
		writeOK(w, b)
		return
	}
	body := map[string]any{"data": data}
	if r, ok := data.(Result); ok {
		body["data"] = r.Data
		if r.Total != nil && *r.Total != 0 {
			body["total"] = *r.Total
		}
		if r.Changes != "" {
			body["changes"] = r.Changes
		}
	}
	buf, err := json.Marshal(body)
	if err != nil {
		writeError(w, route.AsAPIError(route.Fail("unable to encode result: %v", err)))
		return
	}
	writeOK(w, buf)
}

// writeOK sends a 200 with the encoded JSON body b.
func writeOK(w http.ResponseWriter, b []byte) {
	h := w.Header()
	setStdHeaders(h)
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(200)
	_, _ = w.Write(b)
}

func setStdHeaders(h http.Header) {
	h.Set("Server", "pve-api-daemon/3.0")
	h.Set("Cache-Control", "max-age=0")
	h.Set("Pragma", "no-cache")
}

// writeError answers with Proxmox's status line: the code and the first
// line of the message as reason phrase. net/http cannot write a custom
// reason phrase, so the connection is taken over and closed afterwards,
// as pve-http-server also closes connections after errors.
func writeError(w http.ResponseWriter, e *route.APIError) {
	var body []byte
	ctype := "application/json;charset=UTF-8"
	switch {
	case e.NoBody:
	case e.PlainBody:
		body = []byte(e.Message)
		ctype = ""
	default:
		env := map[string]any{"data": nil, "message": e.Message}
		if len(e.Errors) > 0 {
			env["errors"] = e.Errors
		}
		body, _ = json.Marshal(env)
	}
	reason := reasonPhrase(e.Message)
	hj, ok := w.(http.Hijacker)
	if ok {
		conn, bufrw, err := hj.Hijack()
		if err == nil {
			defer conn.Close()
			var b bytes.Buffer
			fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", e.Status, reason)
			now := time.Now().UTC().Format(http.TimeFormat)
			fmt.Fprintf(&b, "Date: %s\r\nExpires: %s\r\nCache-Control: max-age=0\r\nPragma: no-cache\r\nServer: pve-api-daemon/3.0\r\n", now, now)
			if ctype != "" && len(body) > 0 {
				fmt.Fprintf(&b, "Content-Type: %s\r\n", ctype)
			}
			fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
			b.Write(body)
			_, _ = bufrw.Write(b.Bytes())
			_ = bufrw.Flush()
			return
		}
	}
	h := w.Header()
	setStdHeaders(h)
	if ctype != "" && len(body) > 0 {
		h.Set("Content-Type", ctype)
	}
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// dropConnection closes the connection without answering.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// extractParams merges body and query parameters as pve-http-server does.
func extractParams(hr *http.Request, isUpload bool) (map[string]rawValue, *route.Upload, *route.APIError) {
	out := map[string]rawValue{}
	var upload *route.Upload
	if hr.Method == "POST" || hr.Method == "PUT" {
		ct, ctParams, _ := mime.ParseMediaType(hr.Header.Get("Content-Type"))
		if isUpload && hr.ContentLength != 0 {
			if ct != "multipart/form-data" || ctParams["boundary"] == "" {
				return nil, nil, &route.APIError{Status: 500, Message: fmt.Sprintf("upload 'Content-Type '%s' not implemented\n", hr.Header.Get("Content-Type"))}
			}
			u, fields, err := readMultipart(hr, ctParams["boundary"])
			if err != nil {
				return nil, nil, &route.APIError{Status: 500, Message: err.Error() + "\n"}
			}
			upload = u
			for k, v := range fields {
				out[k] = rawValue{s: v}
			}
		} else if hr.ContentLength != 0 {
			if ct != "" && ct != "application/x-www-form-urlencoded" && ct != "application/json" {
				return nil, nil, &route.APIError{Status: 506, Message: fmt.Sprintf("upload 'Content-Type '%s' not implemented", hr.Header.Get("Content-Type")), PlainBody: true}
			}
			body, err := io.ReadAll(io.LimitReader(hr.Body, maxPostSize+1))
			if err != nil {
				return nil, nil, &route.APIError{Status: 400, Message: "unable to read request body"}
			}
			if len(body) > maxPostSize {
				return nil, nil, &route.APIError{Status: 501, Message: "for data too large", PlainBody: true}
			}
			if ct == "application/json" {
				if err := decodeJSONParams(body, out); err != nil {
					return nil, nil, &route.APIError{Status: 400, Message: fmt.Sprintf("malformed JSON string: %v\n", err)}
				}
			} else {
				if err := decodeForm(string(body), out); err != nil {
					return nil, nil, &route.APIError{Status: 400, Message: "invalid form data"}
				}
			}
		}
	}
	if hr.URL.RawQuery != "" {
		q := map[string]rawValue{}
		if err := decodeForm(hr.URL.RawQuery, q); err != nil {
			return nil, nil, &route.APIError{Status: 400, Message: "invalid query string"}
		}
		for k, v := range q {
			out[k] = v
		}
	}
	return out, upload, nil
}

// decodeForm decodes application/x-www-form-urlencoded; a repeated key
// becomes an array, as in Proxmox.
func decodeForm(s string, out map[string]rawValue) error {
	for _, pair := range strings.Split(s, "&") {
		if pair == "" {
			continue
		}
		k, v, hasV := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return err
		}
		val := ""
		if hasV {
			if val, err = url.QueryUnescape(v); err != nil {
				return err
			}
		}
		if old, ok := out[key]; ok {
			if old.kind == vArray {
				old.arr = append(old.arr, val)
				out[key] = old
			} else {
				out[key] = rawValue{kind: vArray, arr: []string{old.s, val}}
			}
			continue
		}
		out[key] = rawValue{s: val}
	}
	return nil
}

func decodeJSONParams(body []byte, out map[string]rawValue) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("expected a JSON object")
	}
	for k, v := range m {
		out[k] = jsonToRaw(v)
	}
	return nil
}

func jsonToRaw(v any) rawValue {
	switch x := v.(type) {
	case nil:
		return rawValue{kind: vNull}
	case string:
		return rawValue{s: x}
	case json.Number:
		return rawValue{s: x.String(), kind: vNumber}
	case bool:
		if x {
			return rawValue{s: "1", kind: vBool}
		}
		return rawValue{s: "0", kind: vBool}
	case []any:
		r := rawValue{kind: vArray}
		for _, e := range x {
			if s, ok := e.(string); ok {
				r.arr = append(r.arr, s)
			} else {
				b, _ := json.Marshal(e)
				r.arr = append(r.arr, string(b))
			}
		}
		return r
	default:
		b, _ := json.Marshal(x)
		return rawValue{s: string(b), kind: vObject}
	}
}

// checkNodeReachable mirrors what proxying to a node does: an unknown name
// fails the host lookup, an offline node does not answer.
func (s *Server) checkNodeReachable(node string) error {
	s.mu.Lock()
	n := s.state.node(node)
	offline := n != nil && s.faults.nodeOffline(node)
	s.mu.Unlock()
	if n == nil {
		if !reNodeName.MatchString(node) {
			return route.ParamErr("node", "invalid format - value does not look like a valid node name\n")
		}
		return route.Fail("hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", node, node)
	}
	if offline {
		return &route.APIError{Status: 595, Message: "No route to host"}
	}
	return nil
}

package pve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Config describes how to reach and authenticate against a Proxmox VE API.
type Config struct {
	// Endpoint is the API base, e.g. https://pve:8006/api2/json. A URL
	// without a path gets /api2/json appended.
	Endpoint    string
	TokenID     string // user@realm!tokenname
	TokenSecret string

	// TLS: verified against the system roots unless one of these is set.
	// Fingerprint (SHA-256, colon hex, any case) wins over CAFile.
	CAFile             string
	Fingerprint        string
	InsecureSkipVerify bool

	// Timeout bounds one HTTP request (default 60s); DialTimeout bounds
	// connecting (default 10s).
	Timeout     time.Duration
	DialTimeout time.Duration

	// GetRetries is how many times a GET is retried on a transient failure
	// (default 3; negative disables); RetryBackoff is the first wait
	// (default 200ms), doubled each time.
	GetRetries   int
	RetryBackoff time.Duration

	// TaskPollMin and TaskPollMax bound the interval between task status
	// polls (default 100ms growing to 2s). The first poll of a task comes
	// after the time its type took lately, within the same bounds.
	TaskPollMin time.Duration
	TaskPollMax time.Duration

	// Transport replaces the HTTP transport (the TLS settings above are
	// then ignored). Tests use it; nil builds one from the settings.
	Transport http.RoundTripper

	// WrapTransport, when set, wraps the transport in use (the one built
	// from the settings, or Transport): the daemon counts requests and
	// errors for its metrics this way.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Client talks to one Proxmox VE cluster. It is safe for concurrent use.
type Client struct {
	cfg      Config
	base     *url.URL
	hc       *http.Client
	auth     string
	requests [4]atomic.Int64 // GET, POST, PUT, DELETE
	// taskTimes is how long tasks took lately, per type (WaitTask).
	taskTimes taskTimes
	// conn is the last connection's local and remote address (ConnAddrs).
	conn atomic.Pointer[[2]string]
}

// ConnAddrs returns the local and the remote IP address of the last
// connection a request used: proxmops' own address as the node sees it,
// and the node's. Both are "" before the first request (or with a
// transport that reports no connection).
func (c *Client) ConnAddrs() (local, remote string) {
	if a := c.conn.Load(); a != nil {
		return a[0], a[1]
	}
	return "", ""
}

// traced records the connection a request gets (httptrace GotConn).
func (c *Client) traced(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Conn == nil {
			return
		}
		host := func(a net.Addr) string {
			if a == nil {
				return ""
			}
			h, _, err := net.SplitHostPort(a.String())
			if err != nil {
				return a.String()
			}
			return h
		}
		c.conn.Store(&[2]string{host(info.Conn.LocalAddr()), host(info.Conn.RemoteAddr())})
	}})
}

// RequestStats counts HTTP requests sent, including retries.
type RequestStats struct {
	Get, Post, Put, Delete int64
}

// Total is the sum of all requests.
func (s RequestStats) Total() int64 { return s.Get + s.Post + s.Put + s.Delete }

// Sub returns s minus an earlier snapshot.
func (s RequestStats) Sub(o RequestStats) RequestStats {
	return RequestStats{s.Get - o.Get, s.Post - o.Post, s.Put - o.Put, s.Delete - o.Delete}
}

// New validates cfg and returns a client. It does not contact the server.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("pve: cluster endpoint is empty")
	}
	base, err := url.Parse(strings.TrimSpace(cfg.Endpoint))
	if err != nil || base.Host == "" || (base.Scheme != "https" && base.Scheme != "http") {
		return nil, fmt.Errorf("pve: invalid cluster endpoint %q: want https://host:8006/api2/json", cfg.Endpoint)
	}
	base.Path = strings.TrimRight(base.Path, "/")
	if base.Path == "" {
		base.Path = "/api2/json"
	}
	base.RawQuery, base.Fragment = "", ""
	if cfg.TokenID == "" || cfg.TokenSecret == "" {
		return nil, errors.New("pve: tokenId and tokenSecret are required")
	}
	if !strings.Contains(cfg.TokenID, "!") || !strings.Contains(cfg.TokenID, "@") {
		return nil, fmt.Errorf("pve: tokenId %q must look like user@realm!tokenname", cfg.TokenID)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.GetRetries == 0 {
		cfg.GetRetries = 3
	} else if cfg.GetRetries < 0 {
		cfg.GetRetries = 0
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 200 * time.Millisecond
	}
	if cfg.TaskPollMin <= 0 {
		cfg.TaskPollMin = 100 * time.Millisecond
	}
	if cfg.TaskPollMax < cfg.TaskPollMin {
		cfg.TaskPollMax = 2 * time.Second
		if cfg.TaskPollMax < cfg.TaskPollMin {
			cfg.TaskPollMax = cfg.TaskPollMin
		}
	}
	rt := cfg.Transport
	if rt == nil {
		tc, err := buildTLSConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("pve: %w", err)
		}
		rt = &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     tc,
			TLSHandshakeTimeout: cfg.DialTimeout,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	if cfg.WrapTransport != nil {
		rt = cfg.WrapTransport(rt)
	}
	return &Client{
		cfg:  cfg,
		base: base,
		hc:   &http.Client{Transport: rt, Timeout: cfg.Timeout},
		auth: "PVEAPIToken=" + cfg.TokenID + "=" + cfg.TokenSecret,
	}, nil
}

// TokenID is the API token the client authenticates with; Proxmox records
// it as the user of the tasks the client starts.
func (c *Client) TokenID() string { return c.cfg.TokenID }

// Endpoint is the API base URL in use.
func (c *Client) Endpoint() string { return c.base.String() }

// Stats returns the number of requests sent so far.
func (c *Client) Stats() RequestStats {
	return RequestStats{c.requests[0].Load(), c.requests[1].Load(), c.requests[2].Load(), c.requests[3].Load()}
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

func (c *Client) count(method string) {
	switch method {
	case http.MethodGet:
		c.requests[0].Add(1)
	case http.MethodPost:
		c.requests[1].Add(1)
	case http.MethodPut:
		c.requests[2].Add(1)
	case http.MethodDelete:
		c.requests[3].Add(1)
	}
}

// Get calls GET path (relative to the API base, segments already escaped)
// and decodes the "data" member into out (which may be nil).
func (c *Client) Get(ctx context.Context, path string, query *Params, out any) error {
	return c.do(ctx, http.MethodGet, path, query, nil, "", out)
}

// Post sends params form-encoded.
func (c *Client) Post(ctx context.Context, path string, params *Params, out any) error {
	return c.do(ctx, http.MethodPost, path, params, nil, "", out)
}

// Put sends params form-encoded.
func (c *Client) Put(ctx context.Context, path string, params *Params, out any) error {
	return c.do(ctx, http.MethodPut, path, params, nil, "", out)
}

// Delete sends params in the query string: Proxmox refuses a body on DELETE.
func (c *Client) Delete(ctx context.Context, path string, query *Params, out any) error {
	return c.do(ctx, http.MethodDelete, path, query, nil, "", out)
}

// PostBody sends a prepared body (multipart uploads). The body cannot be
// replayed, so it is never retried.
func (c *Client) PostBody(ctx context.Context, path string, contentType string, body io.Reader, out any) error {
	return c.do(ctx, http.MethodPost, path, nil, body, contentType, out)
}

func (c *Client) do(ctx context.Context, method, path string, params *Params, body io.Reader, contentType string, out any) error {
	u := *c.base
	// path arrives with its segments escaped (a volume id's '/' is %2F):
	// keep that exact form on the wire.
	rawPath := c.base.EscapedPath() + "/" + strings.TrimLeft(path, "/")
	unescaped, err := url.PathUnescape(rawPath)
	if err != nil {
		return fmt.Errorf("pve: invalid request path %q: %w", path, err)
	}
	u.Path, u.RawPath = unescaped, rawPath
	if (method == http.MethodGet || method == http.MethodDelete) && params.Len() > 0 {
		u.RawQuery = params.Encode()
	}
	display := "/" + strings.TrimLeft(path, "/")
	var form string
	if (method == http.MethodPost || method == http.MethodPut) && body == nil {
		form = params.Encode()
		contentType = "application/x-www-form-urlencoded"
	}

	backoff := c.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = body
		} else if method == http.MethodPost || method == http.MethodPut {
			rd = strings.NewReader(form)
		}
		req, err := http.NewRequestWithContext(c.traced(ctx), method, u.String(), rd)
		if err != nil {
			return fmt.Errorf("pve: building request: %w", err)
		}
		req.Header.Set("Authorization", c.auth)
		req.Header.Set("Accept", "application/json")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		c.count(method)
		resp, err := c.hc.Do(req)
		var refused writeRefused
		if err != nil && errors.As(err, &refused) && refused.WriteRefused() {
			return fmt.Errorf("pve: %s %s: %w", method, display, refused)
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				if method != http.MethodGet && !notSent(err) {
					return &UnknownOutcomeError{Method: method, Path: display, Err: ctxErr}
				}
				return ctxErr
			}
			if ce := certificateError(err); ce != nil {
				return ce
			}
			sent := !notSent(err)
			if method != http.MethodGet && sent {
				return &UnknownOutcomeError{Method: method, Path: display, Err: err}
			}
			retryable := body == nil && attempt < c.cfg.GetRetries
			if !retryable {
				return &UnreachableError{Endpoint: c.base.Host, Err: err}
			}
		} else {
			err = c.decode(resp, method, display, out)
			if err == nil {
				return nil
			}
			if method != http.MethodGet || attempt >= c.cfg.GetRetries || !retryableAnswer(err) {
				return err
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff *= 2
	}
}

// writeRefused is a transport's refusal to send a request at all (the
// leader's fence among replicas: this replica no longer leads); it is
// reported as is, neither retried nor an unknown outcome.
type writeRefused interface {
	error
	WriteRefused() bool
}

// notSent reports whether a transport error happened before the request
// could reach the server (dial failures), so that replaying it is harmless.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// retryableAnswer reports whether an error answer to a GET is worth another
// try: gateway errors and 5xx answers that do not state a definite fact.
func retryableAnswer(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	if ae.StatusCode < 500 || ae.StatusCode == 501 {
		return false
	}
	if notFoundMessage(ae.Message) {
		return false
	}
	return true
}

// envelopeDecoder is an answer type that decodes the whole envelope itself.
type envelopeDecoder interface{ decodeEnvelope(raw []byte) error }

type envelope struct {
	Data    json.RawMessage   `json:"data"`
	Errors  map[string]string `json:"errors"`
	Message string            `json:"message"`
}

func (c *Client) decode(resp *http.Response, method, path string, out any) error {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
	if err != nil {
		if resp.StatusCode == http.StatusOK && method != http.MethodGet {
			return &UnknownOutcomeError{Method: method, Path: path, Err: err}
		}
		return &UnreachableError{Endpoint: c.base.Host, Err: fmt.Errorf("reading answer to %s %s: %w", method, path, err)}
	}
	var env envelope
	jsonErr := json.Unmarshal(raw, &env)
	reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)))
	msg := reason
	if env.Message != "" {
		msg = strings.TrimSpace(env.Message)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if jsonErr != nil {
			return fmt.Errorf("pve: %s %s: answer is not JSON: %w", method, path, jsonErr)
		}
		if er, ok := out.(envelopeDecoder); ok {
			// The caller wants members beside "data" (a network listing's "changes").
			return er.decodeEnvelope(raw)
		}
		if out == nil || len(env.Data) == 0 || string(env.Data) == "null" {
			return nil
		}
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("pve: %s %s: decoding answer: %w", method, path, err)
		}
		return nil
	case resp.StatusCode == http.StatusUnauthorized:
		return &AuthError{TokenID: c.cfg.TokenID, Message: msg}
	case resp.StatusCode == http.StatusForbidden:
		p, priv := parsePermission(msg)
		if p == "" {
			p, priv = parsePermission(string(raw))
		}
		return &PermissionError{Method: method, Endpoint: path, Path: p, Privilege: priv, Message: msg}
	case resp.StatusCode == http.StatusBadRequest:
		return &ParamError{Method: method, Path: path, Message: msg, Params: env.Errors}
	default:
		if len(env.Errors) > 0 {
			return &ParamError{Method: method, Path: path, Message: msg, Params: env.Errors}
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: msg}
	}
}

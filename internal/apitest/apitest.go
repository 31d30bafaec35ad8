// Package apitest is a browser-like client of a proxmops daemon's HTTP API
// for the tests of several packages: a cookie jar, the session's CSRF
// token, JSON bodies.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// Client talks to the API under Base.
type Client struct {
	t    testing.TB
	Base string
	HC   *http.Client
	CSRF string
}

// New is a client of base keeping its cookies in jar.
func New(t testing.TB, base string, jar http.CookieJar) *Client {
	return &Client{t: t, Base: base, HC: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// Do sends body as JSON (none when nil), with the CSRF token once the
// client has one, and returns the answer's status and body.
func (c *Client) Do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.Base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.CSRF != "" {
		req.Header.Set("X-CSRF-Token", c.CSRF)
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Expect is Do, failing the test unless the answer's status is code.
func (c *Client) Expect(code int, method, path string, body any) []byte {
	c.t.Helper()
	got, b := c.Do(method, path, body)
	if got != code {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, got, b, code)
	}
	return b
}

// Login keeps the CSRF token of an answer carrying "me" (setup, login,
// GET /api/v1/me).
func (c *Client) Login(b []byte) {
	c.t.Helper()
	var me struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.Unmarshal(b, &me); err != nil || me.CSRFToken == "" {
		c.t.Fatalf("no csrfToken in %s", b)
	}
	c.CSRF = me.CSRFToken
}

// T is the test the client fails.
func (c *Client) T() testing.TB { return c.t }

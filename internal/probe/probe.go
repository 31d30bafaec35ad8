// Package probe runs one health check probe against a guest: a TCP
// connection, an HTTP request, or a call that asks the QEMU guest agent
// (the caller's, through the Proxmox API). It decides nothing about
// health; the controller counts the results (see controller/healthchecks.go).
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Check is one probe: exactly one of TCP, HTTP or Agent.
type Check struct {
	Address string
	Port    int
	// HTTP: Path ("" is /) and ExpectStatus (0: any 2xx or 3xx).
	HTTP         bool
	Path         string
	ExpectStatus int
	// Agent asks the guest agent; the other fields are unused.
	Agent func(ctx context.Context) error
	// Timeout bounds the probe.
	Timeout time.Duration
}

// Describe names the probe for messages: "tcp 10.0.0.5:5432".
func (c Check) Describe() string {
	switch {
	case c.Agent != nil:
		return "guest agent"
	case c.HTTP:
		return "http " + c.url()
	}
	return "tcp " + c.hostPort()
}

func (c Check) hostPort() string { return net.JoinHostPort(c.Address, strconv.Itoa(c.Port)) }

func (c Check) url() string {
	p := c.Path
	if p == "" {
		p = "/"
	}
	return "http://" + c.hostPort() + p
}

// client does not follow redirects (a 3xx is the answer) nor keep
// connections between probes: each probe dials as a new client would.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
}

// Run runs the probe once: nil when the guest answers as the check wants.
func Run(ctx context.Context, c Check) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	switch {
	case c.Agent != nil:
		return c.Agent(ctx)
	case c.HTTP:
		return runHTTP(ctx, c)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.hostPort())
	if err != nil {
		return plain(err)
	}
	return conn.Close()
}

func runHTTP(ctx context.Context, c Check) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "proxmops-health-check")
	resp, err := client.Do(req)
	if err != nil {
		return plain(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case c.ExpectStatus != 0 && resp.StatusCode != c.ExpectStatus:
		return fmt.Errorf("answered %s, want %d", resp.Status, c.ExpectStatus)
	case c.ExpectStatus == 0 && (resp.StatusCode < 200 || resp.StatusCode >= 400):
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// plain shortens a network error to its cause: "connection refused",
// "timed out".
func plain(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("timed out")
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

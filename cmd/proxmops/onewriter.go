package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/buildinfo"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/spf13/cobra"
)

// One writer with one state: when a daemon serves the cluster, the
// commands that change it go through the daemon's API (cli.server, or
// --server), so the daemon's queue, locks and history see them; without
// one they use the service's database, never a second one made in passing.

// cliUserHeader carries the OS user of the CLI to the daemon, which shows
// it beside the API token in its log and history.
const cliUserHeader = "X-Proxmops-Cli-User"

// envCLIToken is the environment variable of cli.token.
var envCLIToken = config.EnvName("cli.token")

// daemonClient calls a running daemon's API with an API token.
type daemonClient struct {
	base    *url.URL
	token   string
	cluster string // ?cluster= with a clusters list
	hc      *http.Client
}

// newDaemonClient is the client of cfg's cli section, for the cluster
// only names ("" for the single cluster or every cluster).
func newDaemonClient(cfg *config.Config, only string) (*daemonClient, error) {
	if cfg.CLI.Token == "" {
		return nil, fmt.Errorf("cli.server is %s: give an API token of that daemon in %s or cli.tokenFile (make one under Settings, API tokens, with the admin role)", cfg.CLI.Server, envCLIToken)
	}
	base, err := url.Parse(strings.TrimRight(cfg.CLI.Server, "/"))
	if err != nil {
		return nil, fmt.Errorf("cli.server: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CLI.CAFile != "" {
		pem, err := os.ReadFile(cfg.CLI.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cli.caFile: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cli.caFile %s holds no PEM certificate", cfg.CLI.CAFile)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &daemonClient{base: base, token: cfg.CLI.Token, cluster: only, hc: &http.Client{Transport: tr}}, nil
}

// do sends a request to the API (path under /api/v1) and decodes the
// answer into out; an error answer becomes an error with the daemon's words.
func (d *daemonClient) do(ctx context.Context, method, path string, body, out any) error {
	u := *d.base
	u.Path += "/api/v1" + path
	if d.cluster != "" {
		u.RawQuery = url.Values{"cluster": {d.cluster}}.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("User-Agent", "proxmops-cli/"+buildinfo.Version)
	req.Header.Set(cliUserHeader, cliUser())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return fmt.Errorf("the daemon at %s: %w", d.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("the daemon at %s: %w", d.base, err)
	}
	if resp.StatusCode >= 300 {
		var e api.Error
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("the daemon at %s refused %s %s (%d): %s", d.base, method, path, resp.StatusCode, e.Error)
		}
		return fmt.Errorf("the daemon at %s answered %s to %s %s", d.base, resp.Status, method, path)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// resourcePath is the API path of one resource.
func resourcePath(kind, name string) string {
	return "/resources/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// syncThroughDaemon asks the daemon for a sync (of one resource, or of all
// when kind is "") and waits for the pass that carries it out; it returns
// the status list after that pass.
func syncThroughDaemon(ctx context.Context, d *daemonClient, kind, name string, o api.SyncOptions, progress io.Writer) (api.ResourceList, error) {
	var before api.ResourceList
	if err := d.do(ctx, http.MethodGet, "/resources", nil, &before); err != nil {
		return before, err
	}
	path := "/sync"
	if kind != "" {
		path = resourcePath(kind, name) + "/sync"
	}
	var started map[string]string
	if err := d.do(ctx, http.MethodPost, path, o, &started); err != nil {
		return before, err
	}
	fmt.Fprintf(progress, "the daemon at %s: %s\n", d.base, started["status"])
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return before, ctx.Err()
		case <-tick.C:
		}
		var now api.ResourceList
		if err := d.do(ctx, http.MethodGet, "/resources", nil, &now); err != nil {
			return now, err
		}
		if passAfter(now.LastPass, before.LastPass) && now.Counts[vocab.StatusProgressing] == 0 {
			return now, nil
		}
	}
}

func passAfter(now, before *time.Time) bool {
	return now != nil && (before == nil || now.After(*before))
}

// writerConfig loads a changing command's configuration: daemon is true
// when cli.server names a daemon to ask; otherwise, when the command
// writes, offlineWriteGuard is asked first.
func writerConfig(cmd *cobra.Command, flags *config.Flags, writes bool) (cfg *config.Config, daemon bool, err error) {
	cfg, err = loadConfig(flags, cmd.ErrOrStderr())
	if err != nil {
		return nil, false, err
	}
	if cfg.CLI.Server != "" {
		return cfg, true, nil
	}
	if writes {
		if err := offlineWriteGuard(cfg); err != nil {
			return nil, false, err
		}
	}
	return cfg, false, nil
}

// offlineWriteGuard refuses to change the cluster without the daemon when
// one serves this configuration's database (its address named), and
// refuses a database inside a Git work tree.
func offlineWriteGuard(cfg *config.Config) error {
	if err := stateOutsideWorkTree(cfg.Server); err != nil {
		return err
	}
	if cfg.Server.Database != "" {
		return nil
	}
	err := store.ProbeWriter(cfg.Server.DatabasePath)
	var le *store.LockedError
	if errors.As(err, &le) {
		who, where := "another proxmops process", "URL"
		if h := le.Holder; h.PID != 0 {
			who = fmt.Sprintf("proxmops %s (pid %d)", h.Command, h.PID)
		}
		if h := le.Holder; h.Addr != "" {
			who += " listening on " + h.Addr
			where = "http://" + h.Addr + " (https:// when it serves HTTPS)"
		}
		return fmt.Errorf("a daemon serves this cluster: the database %s is in use by %s. Changes go through it, so there is one writer and one history: "+
			"give --server %s (or cli.server) and an API token of the daemon in %s or cli.tokenFile", le.Database, who, where, envCLIToken)
	}
	return err
}

// stateOutsideWorkTree refuses a SQLite database or key file inside a Git
// work tree: one `git add .` would commit the history and the key that
// opens every stored secret.
func stateOutsideWorkTree(s config.Server) error {
	if s.Database != "" && s.KeyFile == "" {
		return nil
	}
	paths := []string{s.KeyFile}
	if s.Database == "" {
		paths = append(paths, s.DatabasePath)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if tree := gitWorkTreeOf(p); tree != "" {
			return fmt.Errorf("refusing to keep proxmops' state in %s: it is inside the Git work tree %s, where it would be committed (the encryption key with it); "+
				"use the daemon (--server), or the service's configuration (/etc/proxmops/proxmops.yaml), or set server.databasePath outside the repository", p, tree)
		}
	}
	return nil
}

// gitWorkTreeOf is the Git work tree holding path, or "" for none.
func gitWorkTreeOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}

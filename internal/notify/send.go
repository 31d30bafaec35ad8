package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/nicholas-fedor/shoutrrr/pkg/format"
	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/buildinfo"
	"github.com/proxmops/proxmops/internal/vocab"
)

// sender delivers one message of a receiver.
type sender interface {
	send(ctx context.Context, receiver string, batch []api.Notice) error
}

// newSender picks the delivery of a URL: the JSON webhook for http(s),
// else the service URL library; it returns the service's name.
func newSender(raw string, client *http.Client) (sender, string, error) {
	scheme, _, _ := strings.Cut(raw, "://")
	switch scheme {
	case "http", "https":
		return &webhook{raw: raw, client: client}, "webhook", nil
	}
	// The scheme must be one the library knows; the rest of the URL is
	// checked at each delivery, once its references are read.
	if _, err := (&router.ServiceRouter{}).NewService(scheme); err != nil {
		return nil, scheme, fmt.Errorf("unknown notification service %q", scheme)
	}
	return &service{raw: raw}, scheme, nil
}

// refPattern is a secret reference in a URL: ${env:NAME} or ${file:PATH},
// read as the manifests' env and file secret references are.
var refPattern = regexp.MustCompile(`\$\{(env|file):([^}]*)\}`)

// resolve reads the URL's references; it returns the URL and the secret
// values, to scrub from errors.
func resolve(raw string) (string, []string, error) {
	var secrets []string
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(raw, func(m string) string {
		sub := refPattern.FindStringSubmatch(m)
		var v string
		switch sub[1] {
		case "env":
			val, ok := os.LookupEnv(sub[2])
			if !ok && firstErr == nil {
				firstErr = fmt.Errorf("environment variable %s is not set (referenced as %s)", sub[2], m)
			}
			v = val
		case "file":
			b, err := os.ReadFile(sub[2])
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("reading the secret of %s: %v", m, err)
			}
			v = strings.TrimRight(string(b), "\r\n")
		}
		if v != "" {
			secrets = append(secrets, v)
		}
		return v
	})
	return out, secrets, firstErr
}

// scrub takes out of an error what may be a secret: the references'
// values, the URL's user information and long path or query parts
// (tokens in Telegram's, Slack's or Gotify's URLs).
func scrub(err error, resolved string, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if u, perr := url.Parse(resolved); perr == nil {
		if u.User != nil {
			p, _ := u.User.Password()
			secrets = append(secrets, u.User.Username(), p)
		}
		for _, part := range strings.FieldsFunc(u.Path+"&"+u.RawQuery, func(r rune) bool { return r == '/' || r == '&' || r == '=' }) {
			if len(part) >= 16 {
				secrets = append(secrets, part)
			}
		}
	}
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "(secret)")
			msg = strings.ReplaceAll(msg, url.PathEscape(s), "(secret)")
		}
	}
	return errors.New(msg)
}

// webhook POSTs api.NotificationBody as JSON.
type webhook struct {
	raw    string
	client *http.Client
}

func (w *webhook) send(ctx context.Context, receiver string, batch []api.Notice) error {
	target, secrets, err := resolve(w.raw)
	if err != nil {
		return err
	}
	body, err := json.Marshal(api.NotificationBody{Receiver: receiver, Text: text(batch), Events: batch})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return scrub(err, target, secrets)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "proxmops/"+buildinfo.Version)
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL may hold a secret
		}
		return scrub(fmt.Errorf("POST %s: %w", redactURL(target), err), target, secrets)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode/100 != 2 {
		return scrub(fmt.Errorf("POST %s: %s: %s", redactURL(target), resp.Status, strings.TrimSpace(string(snippet))), target, secrets)
	}
	return nil
}

func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(the URL)"
	}
	return p.Scheme + "://" + p.Host
}

// service delivers through a shoutrrr service URL.
type service struct{ raw string }

func (s *service) send(ctx context.Context, _ string, batch []api.Notice) error {
	target, secrets, err := resolve(s.raw)
	if err != nil {
		return err
	}
	u, err := url.Parse(target)
	if err != nil {
		return scrub(fmt.Errorf("the service URL: %w", err), target, secrets)
	}
	svc, err := (&router.ServiceRouter{}).NewService(u.Scheme)
	if err == nil {
		err = svc.Initialize(u, nil)
	}
	if err != nil {
		return scrub(fmt.Errorf("the service URL: %w", err), target, secrets)
	}
	msg, title := text(batch), titleOf(batch)
	done := make(chan error, 1)
	go func() { done <- sendService(svc, target, title, msg) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return scrub(err, target, secrets)
}

// sendService sends with a title, unless the URL sets its own or the
// service takes none (then the title leads the text).
func sendService(svc types.Service, target, title, msg string) error {
	u, _ := url.Parse(target)
	q := u.Query()
	if q.Has("title") || q.Has("subject") {
		return svc.Send(msg, &types.Params{})
	}
	err := svc.Send(msg, &types.Params{"title": title})
	if errors.Is(err, format.ErrInvalidConfigKey) {
		return svc.Send(title+"\n"+msg, &types.Params{})
	}
	return err
}

// titleOf is a message's title: the one transition, or how many.
func titleOf(batch []api.Notice) string {
	if len(batch) == 1 {
		return "proxmops: " + headline(batch[0])
	}
	return fmt.Sprintf("proxmops: %d events", len(batch))
}

func headline(n api.Notice) string {
	what := string(n.Event)
	switch {
	case n.Kind != "":
		what = vocab.Key(n.Kind, n.Name) + " " + what
	case n.PullRequest != 0:
		what = fmt.Sprintf("pull request #%d planned", n.PullRequest)
	case n.Event == api.NotifySourceError:
		what = "source error"
	}
	if n.Cluster != "" && n.Cluster != "default" {
		what += " on " + n.Cluster
	}
	return what
}

// text is a message's body: one paragraph per transition.
func text(batch []api.Notice) string {
	var b strings.Builder
	for i, n := range batch {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if len(batch) > 1 {
			b.WriteString(headline(n) + ": ")
		}
		b.WriteString(n.Message)
		if n.Revision != "" {
			fmt.Fprintf(&b, " (revision %s)", shortRev(n.Revision))
		}
		if n.Link != "" {
			b.WriteString("\n" + n.Link)
		}
	}
	return b.String()
}

func shortRev(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

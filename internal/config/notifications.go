package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Notification is one receiver of the `notifications:` list: where the
// messages go, which events it takes and, optionally, which resources.
type Notification struct {
	// Name is a DNS label, unique in the list; the API and the UI show
	// each receiver's deliveries under it.
	Name string `yaml:"name" json:"name"`
	// URL is a JSON webhook (http:// or https://) or a service URL (ntfy://,
	// gotify://, discord://, slack://, matrix://, telegram://, smtp://, ...).
	// ${env:NAME} and ${file:/path} in it are read at each delivery, so the
	// secret is never part of the configuration.
	URL string `yaml:"url" json:"url"`
	// On lists the events the receiver takes (NotificationEvents).
	On []string `yaml:"on" json:"on"`
	// Resources, when set, limits the resource events to those whose
	// Kind/name matches one of these globs (VirtualMachine/web-*, */db).
	Resources []string `yaml:"resources" json:"resources,omitempty"`
}

// NotificationEvents are the words `on` takes, in documented order.
var NotificationEvents = []string{"failed", "degraded", "drift", "synced", "conflict", "source-error", "pr-plan"}

// notificationKeys are the keys of a `notifications:` entry.
var notificationKeys = []string{"name", "url", "on", "resources"}

// NotificationSchemes are the URL schemes a notification is delivered to:
// the JSON webhook and the services internal/notify delivers through its
// service URL library.
var NotificationSchemes = []string{"http", "https", "ntfy", "gotify", "discord", "slack", "matrix", "telegram", "smtp",
	"teams", "pushover", "pushbullet", "mattermost", "rocketchat", "zulip", "googlechat", "bark", "join", "lark", "ifttt", "opsgenie", "signal", "wecom", "generic"}

// secretRefPattern is a reference the URL keeps until delivery.
var secretRefPattern = regexp.MustCompile(`\$\{(env|file):([^}]*)\}`)

func cloneNotifications(in []Notification) []Notification {
	out := slices.Clone(in)
	for i := range out {
		out[i].On = slices.Clone(out[i].On)
		out[i].Resources = slices.Clone(out[i].Resources)
	}
	return out
}

// RedactNotificationURL shows a notification URL without what may be a
// secret: its scheme and host, "/…" for a path or query, never user
// information.
func RedactNotificationURL(raw string) string {
	u, err := url.Parse(secretRefPattern.ReplaceAllString(raw, "x"))
	if err != nil || u.Scheme == "" {
		return "(set)"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Opaque != "" {
		out += "/…"
	}
	return out
}

// notifications decodes the `notifications:` list: a sequence of mappings.
func (l *fileLayer) notifications(c *Config, n *yaml.Node) {
	items, ok := l.sequence(n, "notifications", "a list of receivers (- name: ...)")
	if !ok {
		return
	}
	for i, item := range items {
		where := fmt.Sprintf("notifications[%d]", i)
		pairs, ok := l.mapping(item, where)
		if !ok {
			continue
		}
		var e Notification
		for _, mv := range pairs {
			name, ktk := mv.Key.Value, mv.Key
			switch name {
			case "name":
				e.Name, _ = l.scalar(mv.Value, where+".name")
			case "url":
				e.URL, _ = l.scalarKeepingRefs(mv.Value, where+".url")
			case "on":
				e.On = l.stringList(mv.Value, where+".on")
			case "resources":
				e.Resources = l.stringList(mv.Value, where+".resources")
			default:
				l.problem(ktk, where+"."+name, "unknown key `%s` in a receiver of notifications%s", name, didYouMean(name, notificationKeys))
			}
		}
		c.Notifications = append(c.Notifications, e)
	}
	l.set["notifications"] = true
}

// scalarKeepingRefs is scalar for a value whose ${env:NAME} and
// ${file:PATH} references are read later, at each use.
func (l *fileLayer) scalarKeepingRefs(n *yaml.Node, keyPath string) (string, bool) {
	text, ok := l.rawScalar(n, keyPath)
	if !ok {
		return "", false
	}
	// Expand the ${VAR} around the references, keeping them as written.
	var b strings.Builder
	last := 0
	for _, m := range secretRefPattern.FindAllStringIndex(text, -1) {
		part, ok := l.expand(text[last:m[0]], n, keyPath)
		if !ok {
			return "", false
		}
		b.WriteString(part)
		b.WriteString(text[m[0]:m[1]])
		last = m[1]
	}
	part, ok := l.expand(text[last:], n, keyPath)
	if !ok {
		return "", false
	}
	b.WriteString(part)
	return b.String(), true
}

// rawScalar reads a single value as written.
func (l *fileLayer) rawScalar(n *yaml.Node, keyPath string) (string, bool) {
	switch {
	case isNull(n):
		return "", true
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		return n.Value, true
	}
	l.problem(n, keyPath, "expected a single value, found %s", nodeType(n))
	return "", false
}

// stringList reads a list of single values, or one value as a list of one.
func (l *fileLayer) stringList(n *yaml.Node, keyPath string) []string {
	if n.Kind != yaml.SequenceNode {
		if s, ok := l.scalar(n, keyPath); ok && s != "" {
			return []string{s}
		}
		return nil
	}
	out := []string{}
	for i, v := range n.Content {
		if s, ok := l.scalar(v, fmt.Sprintf("%s[%d]", keyPath, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// validateNotifications checks the `notifications:` list: names, URLs,
// events and resource globs.
func (c *Config) validateNotifications(probs *problems) []string {
	var warnings []string
	seen := map[string]int{}
	for i := range c.Notifications {
		e := &c.Notifications[i]
		where := fmt.Sprintf("notifications[%d]", i)
		switch {
		case e.Name == "":
			probs.addf(where+".name", "is required: a lower-case DNS label such as ops or phone")
		case !clusterNamePattern.MatchString(e.Name):
			probs.addf(where+".name", "%q is not a lower-case DNS label (a-z, 0-9 and -, at most 63 characters)", e.Name)
		default:
			if j, dup := seen[e.Name]; dup {
				probs.addf(where+".name", "%q is also the name of notifications[%d]; names must be unique", e.Name, j)
			}
			seen[e.Name] = i
			where = fmt.Sprintf("notifications[%s]", e.Name)
		}
		if err := checkNotificationURL(e.URL); err != nil {
			probs.addf(where+".url", "%v", err)
		} else if u, _ := url.Parse(secretRefPattern.ReplaceAllString(e.URL, "x")); u != nil && u.User != nil && !secretRefPattern.MatchString(e.URL) {
			warnings = append(warnings, fmt.Sprintf("%s.url holds credentials inline; prefer ${env:NAME} or ${file:/path} in their place", where))
		}
		if len(e.On) == 0 {
			probs.addf(where+".on", "lists no event; take some of %s", strings.Join(NotificationEvents, ", "))
		}
		for _, ev := range e.On {
			if !slices.Contains(NotificationEvents, ev) {
				probs.addf(where+".on", "unknown event %q%s (events are %s)", ev, didYouMean(ev, NotificationEvents), strings.Join(NotificationEvents, ", "))
			}
		}
		for _, sel := range e.Resources {
			if err := checkResourceGlob(sel); err != nil {
				probs.addf(where+".resources", "%v", err)
			}
		}
	}
	return warnings
}

func checkNotificationURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("is required: an http(s):// webhook or a service URL such as ntfy://ntfy.sh/topic")
	}
	for _, m := range secretRefPattern.FindAllStringSubmatch(raw, -1) {
		if strings.TrimSpace(m[2]) == "" {
			return fmt.Errorf("${%s:} names no %s", m[1], map[string]string{"env": "variable", "file": "file"}[m[1]])
		}
	}
	u, err := url.Parse(secretRefPattern.ReplaceAllString(raw, "x"))
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if !slices.Contains(NotificationSchemes, u.Scheme) {
		return fmt.Errorf("unknown scheme %q%s: use http(s):// for a JSON webhook or one of %s", u.Scheme, didYouMean(u.Scheme, NotificationSchemes),
			strings.Join(NotificationSchemes[2:9], ", "))
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return fmt.Errorf("%q names no host", RedactNotificationURL(raw))
	}
	return nil
}

// checkResourceGlob checks a Kind/name selector; both halves are path.Match
// patterns.
func checkResourceGlob(sel string) error {
	kind, name, ok := strings.Cut(sel, "/")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("%q is no Kind/name selector (VirtualMachine/web, Container/*, */db-*)", sel)
	}
	for _, p := range []string{kind, name} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%q: %v", sel, err)
		}
	}
	return nil
}

package logring

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestHandlerTeesAndRedacts(t *testing.T) {
	var out bytes.Buffer
	ring := New(3)
	log := slog.New(ring.Handler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: Redact}), slog.LevelInfo))
	log.Debug("debug goes to stdout only")
	log.With("resource", "VirtualMachine/app-01").WithGroup("git").Info("fetched",
		"commit", "abc", "took", 2*time.Second, "token", "ghp_secret", "err", errors.New("boom"),
		slog.Group("pve", "tokenSecret", "pve-secret", "code", 200))
	lines := ring.Lines(0)
	if len(lines) != 1 {
		t.Fatalf("ring has %d lines", len(lines))
	}
	l := lines[0]
	want := map[string]any{"resource": "VirtualMachine/app-01", "git.commit": "abc", "git.took": "2s",
		"git.token": "[redacted]", "git.err": "boom", "git.pve.tokenSecret": "[redacted]", "git.pve.code": int64(200)}
	for k, v := range want {
		if l.Attrs[k] != v {
			t.Errorf("attr %s = %#v, want %#v", k, l.Attrs[k], v)
		}
	}
	if l.ID != 1 || l.Level != "INFO" || l.Msg != "fetched" {
		t.Errorf("line: %+v", l)
	}
	if !strings.Contains(out.String(), "debug goes to stdout only") || strings.Contains(out.String(), "secret") {
		t.Errorf("stdout handler: %s", out.String())
	}
}

func TestRingBoundsAndSubscribers(t *testing.T) {
	ring := New(3)
	log := slog.New(ring.Handler(slog.DiscardHandler, nil))
	for i := range 5 {
		log.Info("line", "n", i)
	}
	lines := ring.Lines(0)
	if len(lines) != 3 || lines[0].ID != 3 || lines[2].ID != 5 {
		t.Fatalf("ring: %+v", lines)
	}
	if l := ring.Lines(2); len(l) != 2 || l[0].ID != 4 {
		t.Fatalf("limit: %+v", l)
	}
	missed, c, cancel := ring.Subscribe(3)
	if len(missed) != 2 || missed[0].ID != 4 {
		t.Fatalf("missed: %+v", missed)
	}
	log.Warn("new")
	if l := <-c; l.ID != 6 || l.Level != "WARN" {
		t.Fatalf("live: %+v", l)
	}
	cancel()
	cancel()
	if _, open := <-c; open {
		t.Fatal("channel open after cancel")
	}
	// An id from an earlier run: everything still in the ring.
	missed, _, cancel = ring.Subscribe(1000)
	defer cancel()
	if len(missed) != 3 {
		t.Fatalf("restart resume: %d lines", len(missed))
	}
}

func TestALevelBetweenTheNamedOnesIsShownAsTheOneBelowIt(t *testing.T) {
	ring := New(10)
	log := slog.New(ring.Handler(slog.DiscardHandler, slog.LevelDebug))
	for _, l := range []slog.Level{slog.LevelDebug - 2, slog.LevelDebug, slog.LevelInfo + 2, slog.LevelWarn, slog.LevelWarn + 1, slog.LevelError, slog.LevelError + 4} {
		log.Log(t.Context(), l, "line")
	}
	var got []string
	for _, l := range ring.Lines(0) {
		got = append(got, string(l.Level))
	}
	// slog.LevelDebug-2 is below the handler's level.
	want := "DEBUG INFO WARN WARN ERROR ERROR"
	if strings.Join(got, " ") != want {
		t.Errorf("levels %v, want %s", got, want)
	}
}

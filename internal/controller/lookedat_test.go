package controller

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testwait"
)

// TestOpeningACollectionItemReadsItsEntriesAgain: a security group's rules
// and an IP set's entries are read at the drift-check cadence (an hour
// here). Someone changes one by hand and opens the item's drawer: the
// daemon reads it again at once and puts it back, as it does for a guest.
func TestOpeningACollectionItemReadsItsEntriesAgain(t *testing.T) {
	r := newDriftRunDeclaring(t, 3, time.Hour, true)
	c := r.e.c
	for _, tc := range []struct {
		kind, name, path, key string
		change                *pve.Params
		field, want           string
	}{
		{"FirewallGroup", "bench-web", "cluster/firewall/groups/bench-web", "0", pve.NewParams().Set("dport", "8080"), "dport", "80,443"},
		{"FirewallIPSet", "bench-admins", "cluster/firewall/ipset/bench-admins", "192.168.1.11", pve.NewParams().Set("comment", "by hand"), "comment", "laptop"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx := context.Background()
			if err := r.hand.Put(ctx, tc.path+"/"+tc.key, tc.change, nil); err != nil {
				t.Fatal(err)
			}
			r.tick()
			if got := entryField(t, r.hand, tc.path, tc.key, tc.field); got == tc.want {
				t.Fatalf("the hand change was found although nothing asked for a read (driftCheckInterval 1h)")
			}
			before := c.passes.Load()
			if _, err := c.Resource(ctx, tc.kind, tc.name); err != nil {
				t.Fatal(err)
			}
			// The daemon's clock stands still: only the detail can ask for a pass.
			if !testwait.Until(20*time.Second, func() bool { return c.passes.Load() != before }) {
				t.Fatalf("opening %s/%s asked for no new read: the change by hand stays hidden for an hour", tc.kind, tc.name)
			}
			r.settle(before)
			if got := entryField(t, r.hand, tc.path, tc.key, tc.field); got != tc.want {
				t.Errorf("%s %q after opening the detail, want the declared %q", tc.field, got, tc.want)
			}
		})
	}
}

// entryField reads one field of an entry of a rule list (by position) or
// an IP set (by CIDR) as Proxmox lists it.
func entryField(t *testing.T, c *pve.Client, path, key, field string) string {
	t.Helper()
	var list []map[string]any
	if err := c.Get(context.Background(), path, nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		if id, _ := m["cidr"].(string); id == key {
			return asString(m[field])
		}
		if pos, ok := m["pos"].(float64); ok && asString(pos) == key {
			return asString(m[field])
		}
	}
	t.Fatalf("no entry %s in %s: %v", key, path, list)
	return ""
}

func asString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

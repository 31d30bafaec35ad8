package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/vocab"
)

// Reading a collection for export, and the cache of items' nested
// entries (read at the drift-check cadence).

// CollectionItem is one item of a collection as Proxmox lists it, for
// export: its name, whether proxmops owns it, its comment without the
// mark, its values and its entries or rules (in Proxmox's order).
type CollectionItem struct {
	Name    string
	Owned   bool
	Comment string
	Values  map[string]string
	Entries []map[string]string
}

// IsCollection reports whether kind is one of the collections' kinds.
func IsCollection(kind string) bool {
	for _, c := range collections {
		if c.kind == kind {
			return true
		}
	}
	return false
}

// ReadCollection lists every item of a collection kind, with its entries
// (one request for the list, one per item with entries).
func (e *Engine) ReadCollection(ctx context.Context, kind string) ([]CollectionItem, error) {
	var row *collection
	for _, c := range collections {
		if c.kind == kind {
			row = c
		}
	}
	if row == nil {
		return nil, fmt.Errorf("%s is not a collection kind", kind)
	}
	var list []map[string]any
	if err := e.client.Get(ctx, row.list, nil, &list); err != nil {
		return nil, fmt.Errorf("listing %s: %w", row.list, err)
	}
	out := make([]CollectionItem, 0, len(list))
	for _, m := range list {
		it := stringValues(m)
		owned, comment := ParseOwned(it["comment"])
		if row.owner != nil {
			var err error
			if owned, err = row.owner.owned(ctx, e.records, it); err != nil {
				return nil, fmt.Errorf("reading the ownership record of %s %s: %w", row.noun, it[row.key], err)
			}
			comment = ""
		}
		ci := CollectionItem{Name: it[row.key], Owned: owned, Comment: comment, Values: it}
		if name, ours := row.declaredName(ci.Name); ours {
			ci.Name = name
		} else {
			ci.Owned = false
		}
		if path := row.nestedPath(it[row.key]); path != "" {
			var got []map[string]any
			if err := e.client.Get(ctx, path, nil, &got); err != nil {
				return nil, fmt.Errorf("reading the entries of %s %s: %w", row.noun, ci.Name, err)
			}
			for _, en := range got {
				ci.Entries = append(ci.Entries, stringValues(en))
			}
		}
		out = append(out, ci)
	}
	return out, nil
}

// cachedEntries are an item's entries as last read, with what the listing
// showed of the item then (its name and comment).
type cachedEntries struct {
	seen    string
	readAt  time.Time
	entries []collItem
}

// cachedEntriesOf returns an item's entries when the cache holds them,
// the listing shows the item as it did then, and they were read within
// the drift-check period: Proxmox's listing of IP sets carries no sign of
// a change of their entries (its digest covers names and comments), so a
// change made by hand is found at the cadence guests' configurations are.
func (c *ReadCache) cachedEntriesOf(key, seen string) ([]collItem, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := c.entries[key]
	if ce == nil || ce.seen != seen || c.now().Sub(ce.readAt) >= c.every {
		return nil, false
	}
	return ce.entries, true
}

// entryMarks tell a read of an item's entries that began before proxmops
// changed the item from one that began after: the daemon plans while its
// actions run, and a list read halfway through proxmops' own writes (a
// security group whose rules it is still adding) must not be kept, or the
// next plans would see the item drifted for a whole drift-check period.
type entryMarks struct {
	n         uint64
	changedAt map[string]uint64 // by key: n when proxmops last changed it
}

// entriesMark is taken before an item's entries are read, for keepEntries.
func (c *ReadCache) entriesMark() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marks.n
}

// keepEntries keeps entries read since mark, unless proxmops changed the
// item meanwhile (forgetEntries) or someone asked for a new read
// (RefreshEntries).
func (c *ReadCache) keepEntries(key, seen string, entries []collItem, mark uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marks.changedAt[key] > mark {
		return
	}
	if c.entries == nil {
		c.entries = map[string]*cachedEntries{}
	}
	c.entries[key] = &cachedEntries{seen: seen, readAt: c.now(), entries: entries}
}

// RefreshEntries makes the next plan read again the nested entries (an
// IP set's addresses, a security group's rules) of the collection item
// kind/name, as Refresh does a guest's configuration: someone looks at
// it, and what they see must not be a read older than a change by hand.
// It reports whether the cache held them (else the next plan reads them
// anyway).
func (c *ReadCache) RefreshEntries(kind, name string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A row that folds names keeps them in lower case (collection_plan.go).
	held := c.dropEntries(vocab.Key(kind, name))
	if lower := vocab.Key(kind, strings.ToLower(name)); lower != vocab.Key(kind, name) {
		held = c.dropEntries(lower) || held
	}
	return held
}

// forgetEntries makes the next plan read an item's entries (proxmops
// changes them), and drops a read of them begun before.
func (c *ReadCache) forgetEntries(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.dropEntries(key)
	c.mu.Unlock()
}

// dropEntries forgets an item's entries and any read of them begun
// before, reporting whether the cache held them; c.mu is held.
func (c *ReadCache) dropEntries(key string) bool {
	_, held := c.entries[key]
	delete(c.entries, key)
	if c.marks.changedAt == nil {
		c.marks.changedAt = map[string]uint64{}
	}
	c.marks.n++
	c.marks.changedAt[key] = c.marks.n
	return held
}

package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
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

func (c *ReadCache) keepEntries(key, seen string, entries []collItem) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
	held := false
	// A row that folds names keeps them in lower case (collection_plan.go).
	for _, key := range []string{kind + "/" + name, kind + "/" + strings.ToLower(name)} {
		if _, ok := c.entries[key]; ok {
			delete(c.entries, key)
			held = true
		}
	}
	return held
}

// forgetEntries makes the next plan read an item's entries (after
// proxmops changed them).
func (c *ReadCache) forgetEntries(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}

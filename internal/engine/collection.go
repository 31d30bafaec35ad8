package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// A cluster-wide collection (firewall aliases, IP sets, security groups,
// backup jobs, HA rules, storage definitions) is planned by one generic
// reconciler fed by a row of the collections table: this file holds the
// row's shape and the table, collection_plan.go the plan,
// collection_apply.go the requests, collection_read.go export's reading
// and the cache of nested entries; each kind's file holds its row
// (firewall.go, firewall_group.go, backupjob.go, ha.go, storage.go). The
// whole collection is listed with one request per pass, plus one per
// declared item with nested entries or rules (an IP set's addresses, a
// security group's rules). An item is proxmops' when its comment carries
// the ownership mark (markOwned, as interfaces do), or, for a row with an
// owner, when proxmops' store records it: the user's comment text is kept
// beside the mark; an item proxmops cannot prove its own under a declared
// name is a Conflict unless adopted, and is never pruned.

// collection is one row of the collections table.
type collection struct {
	kind   string
	noun   string // "alias", "IP set": for reasons
	plural string
	list   string // GET: the whole collection
	key    string // the item's name in the listing
	// fold: names compared in lower case (Proxmox's aliases).
	fold bool
	// fields are the managed fields besides the comment, with their
	// wanted values in Proxmox's read-back form.
	fields  func(Spec) []collField
	comment func(Spec) string
	// create, update (with the marked comment and every managed field,
	// given the item as listed) and remove are the item's requests.
	create func(s Spec, marked string) collReq
	update func(name string, s Spec, marked string, have collItem) collReq
	remove func(name string) collReq
	// id and nameOf map a declared name to the item's key and back, for
	// a collection whose keys proxmops chooses (a backup job's
	// "proxmops-<name>"); nameOf's false is a key proxmops never gives,
	// whose item is never pruned. Nil: the key is the name.
	id     func(name string) string
	nameOf func(key string) (string, bool)
	// adoptKey, when set, is the key of the item an adopting manifest
	// takes over when none is at id(name) (a key Proxmox cannot change):
	// the item is made again under id(name) and the old one removed.
	adoptKey func(name string) string
	// resolve, when set, completes a spec from the plan (a backup job's
	// guests as VMIDs); its error refuses the item's action.
	resolve func(pc *planContext, s Spec) (Spec, error)
	// needs adds the privileges a change of an item needs besides write.
	needs func(a *Action, s Spec) []privNeed
	// entries is the item's nested list, nil when it has none; rules is
	// its ordered rule list instead (compared by position).
	entries *collEntries
	rules   *collRules
	// dependsOn names the actions an item's creation waits for.
	dependsOn func(d *Desired, s Spec) []string
	// holds, when set, is what a resolved item waits for this pass (an HA
	// rule's guest not yet an HA resource, which this plan does not add);
	// nil when it is ready.
	holds func(pc *planContext, s Spec) *Wait
	// read and write are the privileges the listing and the changes need
	// (Proxmox's schema: Sys.Audit and Sys.Modify on / for the firewall).
	privPath    string
	read, write string

	// What a kind whose items carry no comment (storage definitions)
	// needs instead. owner, when set, proves ownership in place of the
	// mark (comment is then nil). patch, when set, replaces update: the
	// request that makes the item what the changes ask. fixed lists the
	// changes Proxmox refuses on update (fields fixed at creation): a
	// replacement, removal then creation, when replace allows it, refused
	// otherwise. guard reads why an owned item must stay ("" when it may
	// go), asked before a prune. secrets are the changes shown for what a
	// creation or adoption sends and Proxmox never returns (a password):
	// named, never with their value.
	owner   *collOwner
	patch   func(name string, s Spec, changes []vocab.Change, digest string) collReq
	fixed   func(s Spec, it collItem) []vocab.Change
	replace func(s Spec) bool
	guard   func(ctx context.Context, pc *planContext, it collItem) string
	secrets func(s Spec) []vocab.Change
}

// collOwner proves and records the ownership of a collection's items that
// carry no comment: the record is kept in Records (proxmops' store) when
// proxmops creates or adopts an item, and forgotten when it removes it.
type collOwner struct {
	// what says where the proof is, for reasons.
	what   string
	owned  func(ctx context.Context, rec Records, it collItem) (bool, error)
	record func(ctx context.Context, rec Records, s Spec) error
	forget func(ctx context.Context, rec Records, name string) error
}

// collField is one managed field: the Proxmox key, the manifest path and
// the wanted value ("" when unset), compared by same (nil: equal strings).
type collField struct {
	key, path, want string
	same            func(have, want string) bool
	// replace: Proxmox cannot change the field; a change deletes the item
	// and creates it again.
	replace bool
}

// collReq is one request to the API.
type collReq struct {
	method, path string
	params       *pve.Params
	// rules, when set, is an ordered rule list brought to the wanted one
	// (firewall_rules.go) instead of a single request.
	rules *rulePlan
}

func (q collReq) do(ctx context.Context, c *pve.Client) error {
	switch q.method {
	case "POST":
		return c.Post(ctx, q.path, q.params, nil)
	case "PUT":
		return c.Put(ctx, q.path, q.params, nil)
	case "DELETE":
		return c.Delete(ctx, q.path, q.params, nil)
	}
	return fmt.Errorf("unknown method %s", q.method)
}

// collEntries describes an item's nested entries, a list keyed by one
// field and compared as a set: GET path lists them, POST path adds one,
// PUT and DELETE path/{key} change and remove one.
type collEntries struct {
	path   func(name string) string
	key    string
	fields []string // compared besides the key
	want   func(Spec) []collEntry
}

// collRules describes an item's ordered firewall rule list (a security
// group's): GET path lists it; firewall_rules.go compares and changes it.
type collRules struct {
	path  func(name string) string
	field string // the manifest path of the rules
	want  func(Spec) []manifest.FirewallRule
	// users names what still applies the item (rules elsewhere naming
	// it), read before it is removed: it is not removed while any does.
	users func(ctx context.Context, c *pve.Client, name string) ([]string, error)
}

// nestedPath is the API path of an item's nested list, "" when it has none.
func (c *collection) nestedPath(name string) string {
	switch {
	case c.entries != nil:
		return c.entries.path(name)
	case c.rules != nil:
		return c.rules.path(name)
	}
	return ""
}

// collEntry is one wanted entry: its key, its fields in read-back form,
// and its manifest path.
type collEntry struct {
	key    string
	values map[string]string
	path   string
}

// collItem is one listed item, its values as strings.
type collItem map[string]string

// withDigest adds the digest the item was read with to p, so that Proxmox
// refuses the write if the item changed since.
func (it collItem) withDigest(p *pve.Params) *pve.Params {
	if digest := it["digest"]; digest != "" {
		p.Set("digest", digest)
	}
	return p
}

// recomment is the write that changes only the comment of the item name
// (key names it) through a create call at path renaming it to itself.
func recomment(path, key, name, marked string, have collItem) collReq {
	return collReq{method: "POST", path: path,
		params: have.withDigest(pve.NewParams().Set(key, name).Set("rename", name).Set("comment", marked))}
}

func stringValues(in map[string]any) collItem {
	out := collItem{}
	for k, v := range in {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = fmt.Sprint(int64(x))
		case map[string]any:
			// A property string read back as an object (a backup job's
			// prune-backups): written again as one, keys sorted.
			parts := make([]string, 0, len(x))
			for _, pk := range slices.Sorted(maps.Keys(x)) {
				if pv := stringValues(map[string]any{pk: x[pk]})[pk]; pv != "" {
					parts = append(parts, pk+"="+pv)
				}
			}
			out[k] = strings.Join(parts, ",")
		case nil:
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// itemKey is the key of a declared name's item.
func (c *collection) itemKey(name string) string {
	if c.id != nil {
		return c.id(name)
	}
	return name
}

// declaredName is the declared name of an item's key; false for a key
// proxmops never gives.
func (c *collection) declaredName(key string) (string, bool) {
	if c.nameOf != nil {
		return c.nameOf(key)
	}
	return key, true
}

// collectionRow makes a collection's registry row.
func collectionRow(c *collection, desired func(manifest.Resource, SecretReader) Spec) kindRow {
	return kindRow{kind: c.kind, desired: desired, reconciler: func() reconciler { return &collectionReconciler{row: c} },
		needs: func(_ *privContext, a *Action, s Spec) []privNeed {
			out := []privNeed{needAll("change the cluster's "+c.plural, c.privPath, c.write)}
			if c.needs != nil {
				out = append(out, c.needs(a, s)...)
			}
			return out
		}}
}

// OwnershipField names the change an adoption makes to a collection
// item's comment: the ownership mark.
const OwnershipField = "comment (ownership)"

// collections is the table: one row per cluster-wide collection.
var collections = []*collection{firewallAliases, firewallIPSets, firewallGroups, backupJobs, storages, haRules}

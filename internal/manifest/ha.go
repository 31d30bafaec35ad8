package manifest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// KindHARule is a PVE 9 HA rule (/cluster/ha/rules).
const KindHARule Kind = "HARule"

// The HA stack's configuration (pve-ha-manager): a guest's own HA
// resource (spec.ha, /cluster/ha/resources) and the rules placing guests
// (HARule, /cluster/ha/rules; PVE 9's rules replace HA groups).

// GuestHA is a guest's HA resource (sid vm:ID or ct:ID). A field left
// unset is Proxmox's default (src/PVE/HA/Config.pm
// read_and_check_resources_config): a value set by hand is drift.
type GuestHA struct {
	State       string `json:"state,omitempty" pm:"enum=started|stopped|disabled|ignored|absent" doc:"Requested HA state (default started): started, stopped, disabled (stopped and not recovered), ignored (the HA stack leaves the guest alone), or absent (proxmops removes the guest from HA, and from the rules naming it)."`
	MaxRestart  *int   `json:"maxRestart,omitempty" pm:"min=0" doc:"Restarts on the same node after a failed start (default 1)."`
	MaxRelocate *int   `json:"maxRelocate,omitempty" pm:"min=0" doc:"Relocations to another node after failed restarts (default 1)."`
	Failback    *bool  `json:"failback,omitempty" doc:"Move back to the node of highest priority of its node-affinity rule when it comes online (default true)."`
	Comment     string `json:"comment,omitempty" doc:"Comment of the HA resource."`
}

// The HA states of spec.ha.
const (
	HAStarted  = "started"
	HAStopped  = "stopped"
	HADisabled = "disabled"
	HAIgnored  = "ignored"
	HAAbsent   = "absent"
)

// WantedState is the requested state, the default (started) when unset.
func (h *GuestHA) WantedState() string {
	if h.State == "" {
		return HAStarted
	}
	return h.State
}

// HARule is an HA rule (cluster-wide, /cluster/ha/rules).
type HARule struct {
	Object
	Spec HARuleSpec
}

// HARuleSpec is the rule; metadata.name is the rule ID.
type HARuleSpec struct {
	Type     string       `json:"type" pm:"required,enum=node-affinity|resource-affinity" doc:"node-affinity: the guests prefer (or, strict, are kept to) the nodes; resource-affinity: the guests run together (positive) or apart (negative)."`
	Guests   []string     `json:"guests" pm:"required" doc:"Declared VirtualMachine or Container names; each must be an HA resource (spec.ha, or one made by hand)."`
	Nodes    []HARuleNode `json:"nodes,omitempty" doc:"node-affinity only: the nodes, each with an optional priority (higher first)."`
	Strict   bool         `json:"strict,omitempty" doc:"node-affinity only: the guests run only on the nodes named (default false: elsewhere when none of them is available)."`
	Affinity string       `json:"affinity,omitempty" pm:"enum=positive|negative" doc:"resource-affinity only (required): positive keeps the guests on one node, negative on separate nodes."`
	Enabled  *bool        `json:"enabled,omitempty" doc:"false disables the rule (Proxmox's disable flag); default true."`
	Comment  string       `json:"comment,omitempty" doc:"Comment; proxmops adds its ownership marker."`
}

// HARuleNode is one node of a node-affinity rule (Proxmox's node[:priority]).
type HARuleNode struct {
	Node     string `json:"node" pm:"required,format=node" doc:"Node name."`
	Priority int    `json:"priority,omitempty" pm:"min=0" doc:"Priority (default 0); the guests prefer the available nodes of the highest priority."`
}

// Kind returns KindHARule.
func (*HARule) Kind() Kind { return KindHARule }

// Summary says where the rule places its guests, naming the nodes (only
// the graph grouped by node has boxes for them): "on pve1 (2), pve2 · strict", "apart".
func (r *HARule) Summary() string {
	s := r.Spec
	var parts []string
	switch s.Affinity {
	case "negative":
		parts = append(parts, "apart")
	case "positive":
		parts = append(parts, "together")
	}
	if len(s.Nodes) > 0 {
		nodes := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			nodes[i] = n.Node
			if n.Priority != 0 {
				nodes[i] += " (" + strconv.Itoa(n.Priority) + ")"
			}
		}
		parts = append(parts, "on "+strings.Join(nodes, ", "))
	}
	if s.Strict {
		parts = append(parts, "strict")
	}
	if s.Enabled != nil && !*s.Enabled {
		parts = append(parts, "disabled")
	}
	return strings.Join(parts, " · ")
}

// nodeEdges lists a node-affinity rule's nodes (NodeEdges): the guests
// prefer them, or run only on them when the rule is strict.
func (r *HARule) nodeEdges() []NodeEdge {
	if r.Spec.Type != "node-affinity" {
		return nil
	}
	rel := RelationPrefers
	if r.Spec.Strict {
		rel = RelationOnlyOn
	}
	out := make([]NodeEdge, 0, len(r.Spec.Nodes))
	for _, n := range r.Spec.Nodes {
		out = append(out, NodeEdge{Node: n.Node, Priority: n.Priority, Relation: rel})
	}
	return out
}

// MarshalJSON gives back the manifest shape.
func (r *HARule) MarshalJSON() ([]byte, error) {
	return marshalManifest(r.Kind(), &r.Object, &r.Spec)
}

// HARuleNodes encodes the nodes as Proxmox reads them back
// (NodeAffinity.pm encode_plugin_value): sorted by name, ":priority"
// unless 0.
func HARuleNodes(nodes []HARuleNode) string {
	byName := map[string]int{}
	for _, n := range nodes {
		byName[n.Node] = n.Priority
	}
	parts := make([]string, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		if p := byName[n]; p != 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", n, p))
		} else {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

// reConfigID is pve-common's pve-configid (JSONSchema.pm $CONFIGID_RE),
// the format of a rule ID.
var reConfigID = regexp.MustCompile(configIDPattern)

const configIDPattern = `^[A-Za-z][A-Za-z0-9_-]+$`

// checkGuestHA checks a guest's spec.ha against its power state: the HA
// stack starts a guest whose requested state is started and stops one
// that is stopped or disabled, so spec.state must agree with it.
func checkGuestHA(h *GuestHA, state PowerState, c *checker) {
	if h == nil {
		return
	}
	running := state == "" || state == StateRunning
	switch h.WantedState() {
	case HAStarted:
		if !running {
			c.errorf("spec.ha.state", "the HA stack starts a guest whose HA state is started, and spec.state is stopped: set spec.ha.state to stopped (or disabled), or spec.state to running")
		}
	case HAStopped, HADisabled:
		if running {
			c.errorf("spec.ha.state", "the HA stack keeps a guest whose HA state is %s stopped, and spec.state is running: set spec.state: stopped, or spec.ha.state to started", h.State)
		}
	case HAAbsent:
		if h.MaxRestart != nil || h.MaxRelocate != nil || h.Failback != nil || h.Comment != "" {
			c.errorf("spec.ha", "state absent removes the guest from HA: it takes no other field")
		}
	}
}

func (r *HARule) check(c *checker) {
	s := &r.Spec
	if len(s.Comment) > 4096 {
		c.errorf("spec.comment", "at most 4096 characters")
	}
	seen := map[string]bool{}
	for i, g := range s.Guests {
		p := indexPath("spec.guests", i)
		if seen[g] {
			c.errorf(p, "duplicate guest %q", g)
			continue
		}
		seen[g] = true
		if g != "" {
			addRef(r, haGuest.ref(g, p, RelationPlaces))
		}
	}
	switch s.Type {
	case "node-affinity":
		if len(s.Nodes) == 0 {
			c.errorf("spec.nodes", "a node-affinity rule needs at least one node")
		}
		if s.Affinity != "" {
			c.errorf("spec.affinity", "affinity belongs to resource-affinity rules")
		}
		nodes := map[string]bool{}
		for i, n := range s.Nodes {
			if nodes[n.Node] {
				c.errorf(indexPath("spec.nodes", i)+".node", "duplicate node %q", n.Node)
			}
			nodes[n.Node] = true
		}
	case "resource-affinity":
		if s.Affinity == "" {
			c.errorf("spec.affinity", "a resource-affinity rule needs affinity: positive or negative")
		}
		if len(s.Nodes) > 0 {
			c.errorf("spec.nodes", "nodes belong to node-affinity rules")
		}
		if s.Strict {
			c.errorf("spec.strict", "strict belongs to node-affinity rules")
		}
		// ResourceAffinity.pm check_resource_affinity_resources_count.
		if len(s.Guests) == 1 {
			c.errorf("spec.guests", "a resource-affinity rule needs at least two guests (with one it is ineffective)")
		}
	}
}

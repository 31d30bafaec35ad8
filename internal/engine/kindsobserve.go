package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/proxmops/proxmops/internal/pve"
)

// kindsScope is what the container, network and SDN reconcilers ask to be
// read besides guests and storages: one network listing per node that
// matters, one appliance catalogue per node that downloads by package
// name, and the SDN configuration (zones, vnets, and the subnets of
// declared or owned vnets) when SDN is declared or pruned.
type kindsScope struct {
	networks   map[string]bool
	appliances map[string]bool
	sdn        bool
	sdnVnets   map[string]bool // declared vnets whose subnets are read
}

func newKindsScope() kindsScope {
	return kindsScope{networks: map[string]bool{}, appliances: map[string]bool{}, sdnVnets: map[string]bool{}}
}

// kindsObserved is what was read for them.
type kindsObserved struct {
	networks   map[string]*pve.NetworkState
	netErr     map[string]error
	appliances map[string][]pve.Appliance
	aplErr     map[string]error
	sdnRead    bool
	sdnErr     error
	zones      []pve.SDNEntry
	vnets      []pve.SDNEntry
	subnets    map[string][]pve.SDNEntry // by vnet
}

// kindsPlan is shared by the reconcilers of one plan: the SDN action that
// applies the SDN configuration, and the Network actions per interface, so
// that containers plugged into them run after them.
type kindsPlan struct {
	sdnApplyKey string            // action key that runs PUT /cluster/sdn, "" when none
	netKeys     map[string]string // node/iface -> Network action key
	ctemplates  map[string]*resolvedCTemplate
	pools       map[string]string // poolid -> comment, read by the Pool reconciler (nil: not read)
}

// perNodeJobs adds to jobs a read per node: its answer goes to out, its
// error to errs (a node's failed read fails no other).
func perNodeJobs[T any](jobs []func(context.Context) error, mu *sync.Mutex, nodes []string, read func(context.Context, string) (T, error), out map[string]T, errs map[string]error) []func(context.Context) error {
	for _, node := range nodes {
		jobs = append(jobs, func(ctx context.Context) error {
			v, err := read(ctx, node)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[node] = err
				return nil
			}
			out[node] = v
			return nil
		})
	}
	return jobs
}

// kindsJobs returns the reads the kinds need, to run with the others.
func (e *Engine) kindsJobs(snap *Observation, sc kindsScope, mu *sync.Mutex) []func(context.Context) error {
	k := &snap.kinds
	k.networks, k.netErr = map[string]*pve.NetworkState{}, map[string]error{}
	k.appliances, k.aplErr = map[string][]pve.Appliance{}, map[string]error{}
	k.subnets = map[string][]pve.SDNEntry{}
	jobs := perNodeJobs(nil, mu, slices.Sorted(maps.Keys(sc.networks)), e.client.NetworkConfig, k.networks, k.netErr)
	jobs = perNodeJobs(jobs, mu, slices.Sorted(maps.Keys(sc.appliances)), e.client.Appliances, k.appliances, k.aplErr)
	if sc.sdn {
		jobs = append(jobs, func(ctx context.Context) error {
			err := e.readSDN(ctx, k, sc.sdnVnets, mu)
			mu.Lock()
			defer mu.Unlock()
			k.sdnRead, k.sdnErr = err == nil, err
			return nil
		})
	}
	return jobs
}

// readSDN lists zones and vnets (two requests) and the subnets of the vnets
// that are declared or owned (one request each): never every vnet.
func (e *Engine) readSDN(ctx context.Context, k *kindsObserved, declared map[string]bool, mu *sync.Mutex) error {
	zones, err := e.client.SDNPending(ctx, "zones")
	if err != nil {
		return fmt.Errorf("reading SDN zones: %w", err)
	}
	vnets, err := e.client.SDNPending(ctx, "vnets")
	if err != nil {
		return fmt.Errorf("reading SDN vnets: %w", err)
	}
	subnets := map[string][]pve.SDNEntry{}
	for _, v := range vnets {
		owned, _ := ParseOwned(VnetAlias(v))
		if !owned && !declared[v.ID] {
			continue
		}
		subs, err := e.client.SDNPending(ctx, "vnets/"+pve.PathEscape(v.ID)+"/subnets")
		if err != nil {
			return fmt.Errorf("reading the subnets of vnet %s: %w", v.ID, err)
		}
		subnets[v.ID] = subs
	}
	mu.Lock()
	defer mu.Unlock()
	k.zones, k.vnets, k.subnets = zones, vnets, subnets
	return nil
}

// VnetAlias is a vnet's alias, running or pending.
func VnetAlias(v pve.SDNEntry) string {
	if a, ok := v.Config["alias"]; ok {
		return a
	}
	return v.Running["alias"]
}

// sdnByID indexes SDN entries.
func sdnByID(list []pve.SDNEntry) map[string]pve.SDNEntry {
	out := make(map[string]pve.SDNEntry, len(list))
	for _, e := range list {
		out[e.ID] = e
	}
	return out
}

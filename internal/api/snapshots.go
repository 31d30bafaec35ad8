package api

import "github.com/proxmops/proxmops/internal/vocab"

// Snapshot is one Proxmox snapshot of a guest, as GET
// /api/v1/resources/{kind}/{name}/snapshots lists it.
type Snapshot struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Time is when it was taken, in Unix seconds (Proxmox's snaptime).
	Time    int64  `json:"time"`
	Parent  string `json:"parent,omitempty"`
	VMState bool   `json:"vmstate"`
	// Proxmops says the snapshot is one of proxmops' own (named
	// proxmops-...): proxmops prunes those, never the others.
	Proxmops bool `json:"proxmops"`
	// RollbackBlocked says why Proxmox would refuse a rollback to this
	// snapshot ("" when it can roll back to it): a volume on a storage
	// that rolls back to its most recent snapshot only (ZFS, LVM, or
	// snapshot-as-volume-chain) has a newer one.
	RollbackBlocked string `json:"rollbackBlocked,omitempty"`
}

// SnapshotList is the answer of GET .../snapshots: the guest's snapshots,
// newest first, and the one its current state is based on.
type SnapshotList struct {
	Kind      string     `json:"kind"`
	Name      string     `json:"name"`
	Node      string     `json:"node"`
	VMID      int        `json:"vmid"`
	Running   bool       `json:"running"`
	Current   string     `json:"current,omitempty"`
	Snapshots []Snapshot `json:"snapshots"`
	// HA is the guest's HA resource ("vm:100") when the HA stack manages
	// it: a rollback sets it to ignored meanwhile and restores it after.
	HA string `json:"ha,omitempty"`
	// SyncPolicy decides what happens after a rollback: auto re-applies
	// the manifest at the next pass, manual leaves the guest as rolled back.
	SyncPolicy vocab.SyncPolicy `json:"syncPolicy"`
}

// RollbackRequest is the body of POST .../rollback; an empty Snapshot
// means the newest snapshot proxmops took.
type RollbackRequest struct {
	Snapshot string `json:"snapshot,omitempty"`
}

// RollbackResult says what a rollback did and what comes next.
type RollbackResult struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Snapshot string `json:"snapshot"`
	// Started says the guest, running before, was started again.
	Started    bool             `json:"started"`
	SyncPolicy vocab.SyncPolicy `json:"syncPolicy"`
	// Next tells the user what happens now between the rolled-back guest
	// and Git (re-applied at the next pass, or left OutOfSync).
	Next string `json:"next"`
}

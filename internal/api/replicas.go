package api

import "time"

// ReplicaRole is a replica's part among the replicas sharing one
// PostgreSQL database.
type ReplicaRole string

// Roles of a replica.
const (
	ReplicaLeader   ReplicaRole = "leader"
	ReplicaFollower ReplicaRole = "follower"
	// ReplicaSingle is a daemon on SQLite: the only writer, always leading.
	ReplicaSingle ReplicaRole = "single"
)

// ReplicaRoles lists the replica roles in documented order.
var ReplicaRoles = []ReplicaRole{ReplicaLeader, ReplicaFollower, ReplicaSingle}

// LeaderInfo is the replica that leads: who, since when and its term,
// which grows by one at every acquisition.
type LeaderInfo struct {
	Replica string `json:"replica"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// URL is where the other replicas reach the leader's HTTP API.
	URL   string    `json:"url,omitempty"`
	Since time.Time `json:"since"`
	Term  int64     `json:"term"`
}

// ReplicaStatus is GET /api/v1/replicas: this replica's role and the
// leader (none while no replica holds the lock, e.g. during a failover,
// and none for a single daemon).
type ReplicaStatus struct {
	Role    ReplicaRole `json:"role"`
	Replica string      `json:"replica"`
	Leader  *LeaderInfo `json:"leader,omitempty"`
}

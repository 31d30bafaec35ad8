// Package leader elects exactly one leader among the replicas of proxmops
// sharing one PostgreSQL database: only the leader reconciles, the others
// serve the UI and the API and forward what needs the controller.
//
// The leader holds a session-level advisory lock (pg_try_advisory_lock) on a
// connection of its own. PostgreSQL releases it when that session ends: at
// once when the process dies (the kernel closes its socket), and within the
// idle session timeout the leader sets on its session when the leader is cut
// off from the database (the server ends a session idle that long, and a
// healthy leader pings far more often).
//
// Two terms never overlap, by the clock rather than by the scheduling of
// goroutines (lease.go): a term acts only until a lease after the sending of
// the last ping its session answered, its context ends then, and its fenced
// writes (fence.go) check the lease as they are made; a follower that takes
// the lock waits one lease before its term begins, unless the previous
// leader recorded its clean stop. See docs/ha.md.
package leader

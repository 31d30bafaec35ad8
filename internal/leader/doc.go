// Package leader elects exactly one leader among the replicas of proxmops
// sharing one PostgreSQL database: only the leader reconciles, the others
// serve the UI and the API and forward what needs the controller.
//
// The leader holds a session-level advisory lock (pg_try_advisory_lock) on a
// connection of its own. PostgreSQL releases it when that session ends: at
// once when the process dies (the kernel closes its socket), and within the
// idle session timeout the leader sets on its session when the leader is cut
// off from the database (the server ends a session idle that long, and a
// healthy leader pings far more often). The leader itself stops leading when
// no ping succeeded for a third of the failover timeout, well before the
// server can release the lock, so a cut-off leader has stopped acting before
// a follower can take over. See docs/ha.md.
package leader

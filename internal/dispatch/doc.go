// Package dispatch runs actions concurrently under limits: at most N at a
// time overall, per Proxmox node and per storage, so that a burst of clones
// or downloads never piles up on one node's locks. The limits are acquired
// all at once (never one by one), so two actions can never hold part of what
// the other needs and deadlock.
//
// A Dispatcher adds de-duplication for the daemon: a job whose key is
// already running is refused, so a slow action is never started twice by
// consecutive passes.
package dispatch

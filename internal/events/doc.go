// Package events is the hub between the controller, which publishes status
// changes (hub.Publish("resource", summary)), and the server, which streams
// them to browsers as Server-Sent Events. The hub keeps a bounded buffer of
// recent events so a client reconnecting with Last-Event-ID gets what it
// missed; event ids carry the hub's start time, so after a daemon restart an
// old id is recognised as unknown and the client gets a fresh snapshot.
package events

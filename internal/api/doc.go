// Package api holds the JSON types of the daemon's HTTP API (docs/api.md),
// shared by the server, the controller and, through the documentation, the UI.
// It contains types, constants and sentinel errors only: no behaviour, so any
// package may import it without pulling in HTTP or storage code.
package api

//go:generate go run ./tsgen ../../web/src/api/generated.ts

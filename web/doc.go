// Package web embeds the proxmops dashboard (a React application built from this
// directory by `make web`) and serves it over HTTP.
//
// The build writes embedded/dist. When it is absent, as in a Go-only build, the
// handler serves the committed page in embedded/fallback, which explains how to build
// the UI; the API keeps working either way.
package web

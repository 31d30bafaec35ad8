package main

import "io/fs"

// uiFS is the embedded web UI served by the daemon; nil until package web
// is part of the build (the server then shows how to build the UI).
func uiFS() fs.FS { return nil }

package main

import (
	"io/fs"

	"github.com/proxmops/proxmops/web"
)

// uiFS is the embedded web UI the daemon serves: the built UI, or a page
// that says how to build it when web/dist was absent at build time.
func uiFS() fs.FS { return web.FS() }

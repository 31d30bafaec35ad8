package server

import (
	"io/fs"
	"net/http"
	"path"
	"strings"
)

const noUIPage = `<!doctype html><html><head><meta charset="utf-8"><title>proxmops</title></head>
<body><h1>proxmops</h1><p>The API is running under <code>/api/v1</code>, but this binary was built
without the web UI. Build it with <code>make build</code> (needs Node.js).</p></body></html>
`

// handleUI serves the single-page app: files as they are (hashed assets
// cached for good), any other path index.html, so client-side routes work
// on reload.
func (s *Server) handleUI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on "+r.URL.Path)
		return
	}
	if s.opt.UI == nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write([]byte(noUIPage))
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name != "" {
		if fi, err := fs.Stat(s.opt.UI, name); err == nil && !fi.IsDir() {
			if strings.HasPrefix(name, "assets/") {
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				w.Header().Set("Cache-Control", "no-cache")
			}
			http.ServeFileFS(w, r, s.opt.UI, name)
			return
		}
		if path.Ext(name) != "" { // a missing file, not a client-side route
			http.NotFound(w, r)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.opt.UI, "index.html")
}

package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// The whole embedded/ directory is embedded because go:embed refuses a pattern that
// matches nothing: embedded/fallback is committed, embedded/dist exists only after the
// UI was built.
//
//go:embed all:embedded
var embedded embed.FS

// Built reports whether the real UI (embedded/dist) is part of this binary.
func Built() bool {
	_, err := fs.Stat(embedded, "embedded/dist/index.html")
	return err == nil
}

// FS returns the files the handler serves: the built UI, or the fallback page.
func FS() fs.FS {
	dir := "embedded/fallback"
	if Built() {
		dir = "embedded/dist"
	}
	sub, err := fs.Sub(embedded, dir)
	if err != nil {
		// fs.Sub fails only on an invalid path; both are constants.
		panic(err)
	}
	return sub
}

// Handler serves the UI as a single-page application: a request for an existing
// file gets that file, any other path gets index.html so that the browser's router
// can show it (deep links such as /logs or /?kind=VirtualMachine work). Mount it
// after the /api routes: it answers every path it is given.
func Handler() http.Handler {
	return newHandler(FS())
}

func newHandler(files fs.FS) http.Handler {
	index, _ := fs.ReadFile(files, "index.html")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(files, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					// Vite puts a content hash in every asset's name.
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				http.ServeFileFS(w, r, files, name)
				return
			}
			if strings.HasPrefix(name, "assets/") || strings.HasPrefix(name, "api/") {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, "index.html", time.Time{}, strings.NewReader(string(index)))
	})
}

package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHandlerServesFilesAndFallsBackToIndex(t *testing.T) {
	files := fstest.MapFS{
		"index.html":         {Data: []byte("<html>app</html>")},
		"assets/app-1a2b.js": {Data: []byte("console.log(1)")},
		"favicon.svg":        {Data: []byte("<svg/>")},
	}
	h := newHandler(files)
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string
		wantCache          string
	}{
		{"root", "GET", "/", 200, "<html>app</html>", "no-cache"},
		{"deep link to a page", "GET", "/logs", 200, "<html>app</html>", "no-cache"},
		{"deep link with query", "GET", "/?kind=VirtualMachine&status=OutOfSync", 200, "<html>app</html>", "no-cache"},
		{"hashed asset", "GET", "/assets/app-1a2b.js", 200, "console.log(1)", "public, max-age=31536000, immutable"},
		{"plain file", "GET", "/favicon.svg", 200, "<svg/>", ""},
		{"missing asset is a 404, not the page", "GET", "/assets/gone.js", 404, "404 page not found\n", ""},
		{"unknown API path is a 404", "GET", "/api/v1/nothing", 404, "404 page not found\n", ""},
		{"path escaping the root", "GET", "/../../etc/passwd", 200, "<html>app</html>", "no-cache"},
		{"write method refused", "POST", "/", 405, "method not allowed\n", ""},
		{"head", "HEAD", "/settings", 200, "", "no-cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
			if got := res.Header.Get("Cache-Control"); got != tt.wantCache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.wantCache)
			}
		})
	}
}

// Whatever the state of web/embedded/dist, the embedded handler serves a page at /.
func TestEmbeddedHandlerServesAPage(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", res.StatusCode)
	}
	want := "UI not built"
	if Built() {
		want = `<div id="root">`
	}
	if !strings.Contains(string(body), want) {
		t.Errorf("page does not contain %q:\n%s", want, body)
	}
}

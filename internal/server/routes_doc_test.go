package server

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// docs/api.md's route table is the list of routes the router serves: no
// route undocumented, none documented that does not exist.
func TestAPIDocListsEveryRoute(t *testing.T) {
	e := newEnv(t)
	served := map[string]bool{}
	err := chi.Walk(e.srv.Router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+strings.Replace(route, "/*/", "/", -1)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z]+)` \\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]+" "+m[2]] = true
	}
	if len(served) < 10 {
		t.Fatalf("the router walk found only %v", sorted(served))
	}
	for r := range served {
		if !documented[r] {
			t.Errorf("%s is served but not in docs/api.md's route table", r)
		}
	}
	for r := range documented {
		if !served[r] {
			t.Errorf("docs/api.md lists %s, which the router does not serve", r)
		}
	}
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

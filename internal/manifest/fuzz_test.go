package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic or
// hang, every error must carry a position inside the input, and whatever it
// accepts must survive a JSON round trip unchanged.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"testdata/seeds", "testdata/invalid", "../../examples"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		more, _ := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
		for _, p := range append(files, more...) {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(billionLaughs()))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, errs := ParseFile("fuzz.yaml", data)
		// Lines as YAML counts them: CR LF, CR and LF each end one.
		lines := 1 + bytes.Count(normalizeLineBreaks(data), []byte("\n"))
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Line < 0 || e.Line > lines || e.Message == "" {
				t.Fatalf("error without a sound position: %+v (input has %d lines)", e, lines)
			}
		}
		if len(errs) == 0 {
			if _, serrs := NewSet(res); serrs == nil {
				_ = serrs
			}
		}
		for _, r := range res {
			first, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			again, aerrs := ParseFile("again.json", first)
			if len(aerrs) > 0 || len(again) != 1 {
				t.Fatalf("accepted manifest does not reload from its JSON: %v\n%s", aerrs, first)
			}
			second, _ := json.Marshal(again[0])
			if string(first) != string(second) {
				t.Fatalf("round trip changed it:\n%s\n%s", first, second)
			}
		}
	})
}

package vocab

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tsTypes is the UI's copy of the vocabulary (written by internal/api/tsgen), which must say the same.
const tsTypes = "../../web/src/api/generated.ts"

func words[W Word](ws []W) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

var (
	tsTypeRE  = regexp.MustCompile(`(?m)^export type (\w+) = ([^;]+);`)
	tsConstRE = regexp.MustCompile(`(?ms)^export const (\w+) = \[([^\]]*)\] as const;`)
	tsTypeof  = regexp.MustCompile(`^\(typeof (\w+)\)\[number\]$`)
	tsWordRE  = regexp.MustCompile(`'([^']*)'`)
)

// tsUnions reads the string-literal union types of a TypeScript file, in
// their written order; a union written as (typeof CONST)[number] is read
// from the const array.
func tsUnions(t *testing.T, src string) map[string][]string {
	t.Helper()
	consts := map[string]string{}
	for _, m := range tsConstRE.FindAllStringSubmatch(src, -1) {
		consts[m[1]] = m[2]
	}
	out := map[string][]string{}
	for _, m := range tsTypeRE.FindAllStringSubmatch(src, -1) {
		body := strings.TrimSpace(m[2])
		if c := tsTypeof.FindStringSubmatch(body); c != nil {
			arr, ok := consts[c[1]]
			if !ok {
				t.Fatalf("type %s refers to const %s, not found", m[1], c[1])
			}
			body = arr
		}
		var ws []string
		for _, w := range tsWordRE.FindAllStringSubmatch(body, -1) {
			ws = append(ws, w[1])
		}
		out[m[1]] = ws
	}
	return out
}

func TestTypeScriptUnionsMatch(t *testing.T) {
	b, err := os.ReadFile(tsTypes)
	if err != nil {
		t.Fatal(err)
	}
	unions := tsUnions(t, string(b))
	tests := []struct {
		name string
		want []string
	}{
		{"Status", words(Statuses)},
		{"Health", words(Healths)},
		{"Action", words(Actions)},
		{"SyncPolicy", words(SyncPolicies)},
		{"Hold", words(Holds)},
	}
	for _, tt := range tests {
		got, ok := unions[tt.name]
		if !ok {
			t.Errorf("%s: no union type %s", tsTypes, tt.name)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: type %s is %q; internal/vocab says %q", tsTypes, tt.name, got, tt.want)
		}
	}
}

var tsInterfaceRE = regexp.MustCompile(`(?ms)^export interface Change \{(.*?)^\}`)
var tsFieldRE = regexp.MustCompile(`(?m)^\s*(\w+)(\??):`)

func TestTypeScriptChangeMatches(t *testing.T) {
	b, err := os.ReadFile(tsTypes)
	if err != nil {
		t.Fatal(err)
	}
	m := tsInterfaceRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no interface Change", tsTypes)
	}
	ts := map[string]bool{} // field -> optional
	for _, f := range tsFieldRE.FindAllSubmatch(m[1], -1) {
		ts[string(f[1])] = string(f[2]) == "?"
	}
	rt := reflect.TypeFor[Change]()
	goFields := map[string]bool{}
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		goFields[name] = strings.Contains(opts, "omitempty")
	}
	if !reflect.DeepEqual(ts, goFields) {
		t.Errorf("%s: Change has fields %v (name: optional); internal/vocab says %v", tsTypes, ts, goFields)
	}
}

func TestTsUnionsReadsBothForms(t *testing.T) {
	src := "export const XS = ['a', 'b'] as const;\nexport type X = (typeof XS)[number];\nexport type Y = 'c' | 'd';\n"
	got := tsUnions(t, src)
	if !slices.Equal(got["X"], []string{"a", "b"}) || !slices.Equal(got["Y"], []string{"c", "d"}) {
		t.Fatalf("%q", got)
	}
}

// validWord is a vocabulary type with its Valid method.
type validWord interface {
	Word
	Valid() bool
}

// checkAllValid fails for each word of list that is not Valid.
func checkAllValid[W validWord](t *testing.T, what string, list []W) {
	t.Helper()
	for _, w := range list {
		if !w.Valid() {
			t.Errorf("%s %q not valid", what, w)
		}
	}
}

func TestWordsAreValidAndOthersAreNot(t *testing.T) {
	checkAllValid(t, "status", Statuses)
	checkAllValid(t, "health", Healths)
	checkAllValid(t, "action", Actions)
	checkAllValid(t, "sync policy", SyncPolicies)
	if Status(0).Valid() || Status(99).Valid() || Health(0).Valid() || Action(-1).Valid() || SyncPolicy(4).Valid() {
		t.Error("a value outside the vocabulary is valid")
	}
	if _, err := ParseStatus("synced"); err == nil {
		t.Error("status synced parsed")
	}
	if _, err := ParseAction("Create"); err == nil {
		t.Error("action Create parsed")
	}
	if _, err := ParseSyncPolicy("Auto"); err == nil {
		t.Error("sync policy Auto parsed")
	}
	if _, err := ParseHealth("ok"); err == nil {
		t.Error("health ok parsed")
	}
}

// The words on the wire are those of docs/api.md, whatever the values
// inside: a word marshals to itself and reads back as the same constant.
func TestWireWordsAreTheDocumentedOnes(t *testing.T) {
	b, err := json.Marshal(map[string]any{"s": StatusOutOfSync, "h": HealthDegraded, "a": ActionNone, "p": SyncManual,
		"unset": Status(0), "counts": map[Status]int{StatusSynced: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"none","counts":{"Synced":1},"h":"Degraded","p":"manual","s":"OutOfSync","unset":""}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	want := map[string][]string{
		"status": {"Synced", "OutOfSync", "Progressing", "Failed", "Conflict", "Unknown"},
		"health": {"Healthy", "Progressing", "Suspended", "Missing", "Degraded", "Unknown"},
		"action": {"create", "update", "reboot", "delete", "none"},
		"sync":   {"auto", "manual", "disabled"},
	}
	got := map[string][]string{"status": words(Statuses), "health": words(Healths), "action": words(Actions), "sync": words(SyncPolicies)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("words %v, want %v", got, want)
	}
	for _, w := range want["status"] {
		if s, err := ParseStatus(w); err != nil || s.String() != w {
			t.Errorf("%s reads back as %v, %v", w, s, err)
		}
	}
	if _, err := json.Marshal(Status(99)); err == nil {
		t.Error("a status outside the vocabulary marshals")
	}
}

func TestDecodingRefusesUnknownWords(t *testing.T) {
	var doc struct {
		Status Status     `json:"status"`
		Health Health     `json:"health"`
		Action Action     `json:"action"`
		Sync   SyncPolicy `json:"sync"`
	}
	if err := json.Unmarshal([]byte(`{"status":"OutOfSync","health":"Degraded","action":"reboot","sync":"manual"}`), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Status != StatusOutOfSync || doc.Health != HealthDegraded || doc.Action != ActionReboot || doc.Sync != SyncManual {
		t.Fatalf("%+v", doc)
	}
	if err := json.Unmarshal([]byte(`{"status":""}`), &doc); err != nil || doc.Status != 0 {
		t.Fatalf("empty status: %v %q", err, doc.Status)
	}
	for _, bad := range []string{`{"status":"Sync"}`, `{"health":"ok"}`, `{"action":"recreate"}`, `{"sync":"always"}`} {
		if err := json.Unmarshal([]byte(bad), &doc); err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	var counts map[Status]int
	if err := json.Unmarshal([]byte(`{"Synced":2,"Failed":1}`), &counts); err != nil || counts[StatusSynced] != 2 || counts[StatusFailed] != 1 {
		t.Fatalf("%v %v", counts, err)
	}
}

func TestChangeString(t *testing.T) {
	tests := []struct {
		c    Change
		want string
	}{
		{Change{Field: "cores", From: "2", To: "4"}, "cores: 2 -> 4"},
		{Change{Field: "vmid", To: "120"}, "vmid: 120"},
		{Change{Field: "net1", Path: "spec.net[1]", From: "virtio,bridge=vmbr0"}, "net1: virtio,bridge=vmbr0 -> (unset)"},
		{Change{Field: "x"}, "x: (unset) -> (unset)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestCountPutsEveryItemInExactlyOneStatus(t *testing.T) {
	items := []Status{StatusSynced, StatusOutOfSync, 0, Status(99), StatusFailed, StatusSynced}
	got := Count(items, func(s Status) Status { return s })
	want := map[Status]int{StatusSynced: 2, StatusOutOfSync: 1, StatusProgressing: 0, StatusFailed: 1, StatusConflict: 0, StatusUnknown: 2}
	if len(got) != len(Statuses) {
		t.Fatalf("counts %v lack a status", got)
	}
	for s, n := range want {
		if got[s] != n {
			t.Errorf("%s: %d, want %d (%v)", s, got[s], n, got)
		}
	}
}

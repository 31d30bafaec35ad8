package manifest

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// diffTree describes the first difference between two trees, or "".
func diffTree(a, b *yNode, path string) string {
	empty := func(n *yNode) bool { return n == nil || n.kind == nullNode && n.line == 0 }
	if empty(a) || empty(b) {
		if empty(a) && empty(b) {
			return ""
		}
		return fmt.Sprintf("%s: one tree is empty: %+v vs %+v", path, a, b)
	}
	sameFloat := a.fval == b.fval || math.IsNaN(a.fval) && math.IsNaN(b.fval)
	if a.kind != b.kind || a.line != b.line || a.col != b.col || a.typ != b.typ || a.text != b.text ||
		a.ival != b.ival || !sameFloat || a.bval != b.bval || a.size != b.size ||
		len(a.keys) != len(b.keys) || len(a.vals) != len(b.vals) {
		return fmt.Sprintf("%s: fast {kind %d %d:%d %s %q i=%d f=%g b=%v size %d keys %d vals %d} != goccy {kind %d %d:%d %s %q i=%d f=%g b=%v size %d keys %d vals %d}", path,
			a.kind, a.line, a.col, a.typ, a.text, a.ival, a.fval, a.bval, a.size, len(a.keys), len(a.vals),
			b.kind, b.line, b.col, b.typ, b.text, b.ival, b.fval, b.bval, b.size, len(b.keys), len(b.vals))
	}
	for i := range a.keys {
		if d := diffTree(a.keys[i], b.keys[i], fmt.Sprintf("%s.key%d", path, i)); d != "" {
			return d
		}
	}
	for i := range a.vals {
		step := fmt.Sprintf("%s[%d]", path, i)
		if a.kind == mapNode {
			step = path + "." + a.keys[i].text
		}
		if d := diffTree(a.vals[i], b.vals[i], step); d != "" {
			return d
		}
	}
	return ""
}

// fastAgrees runs the fast path on every document of data and, for each one
// it accepts, checks that goccy's path gives no error and the same tree. It
// returns how many documents the fast path accepted and the first
// disagreement.
func fastAgrees(data []byte) (accepted, total int, problem string) {
	// What parseYAML refuses before splitting never reaches either parser.
	if len(data) > MaxFileSize || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return 0, 0, ""
	}
	data = bytes.TrimPrefix(normalizeLineBreaks(data), []byte("\xef\xbb\xbf"))
	for _, c := range splitDocuments(data) {
		if len(c.text) > MaxDocumentSize {
			continue
		}
		total++
		fast, ok := fastParseUnguarded(c.text, c.line-1, nil)
		if !ok {
			continue
		}
		accepted++
		budget := maxFileParseCost
		ref, errs := parseDocumentGoccy(c.text, c.line-1, &budget)
		if len(errs) > 0 {
			return accepted, total, fmt.Sprintf("document at line %d: fast path accepted what goccy rejects: %v", c.line, errs)
		}
		if d := diffTree(fast, ref, "$"); d != "" {
			return accepted, total, fmt.Sprintf("document at line %d: %s", c.line, d)
		}
	}
	return accepted, total, ""
}

// TestFastPathAgreesWithGoccy checks the fast path against goccy on every
// manifest the repository holds and on snippets chosen to sit on the edges
// of the subset it reads.
func TestFastPathAgreesWithGoccy(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/*/*.yaml", "testdata/*/*/*.yaml", "../../examples/*.yaml", "../../examples/*/*.yaml", "../../examples/*/*/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d manifest files", len(files))
	}
	valid := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		accepted, total, problem := fastAgrees(data)
		if problem != "" {
			t.Errorf("%s: %s", f, problem)
		}
		// Every valid manifest the project ships is in the fast subset;
		// if one is not, loading it silently became several times slower.
		if !strings.Contains(f, "testdata/invalid") && !strings.Contains(f, "testdata/fuzz") {
			valid++
			if accepted != total {
				t.Errorf("%s: the fast path read %d of %d documents", f, accepted, total)
			}
		}
	}
	if valid == 0 {
		t.Fatal("no valid manifest files checked")
	}
	for i, snippet := range fastPathSnippets {
		if _, _, problem := fastAgrees([]byte(snippet)); problem != "" {
			t.Errorf("snippet %d %q: %s", i, snippet, problem)
		}
	}
}

// TestFastPathReadsBenchmarkManifests makes sure the manifests of
// BenchmarkLoad10k stay on the fast path (else the benchmark measures goccy).
func TestFastPathReadsBenchmarkManifests(t *testing.T) {
	dir := benchTree(t, 10, 10)
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		accepted, total, problem := fastAgrees(data)
		if problem != "" || accepted != total {
			t.Errorf("%s: fast path read %d of %d documents; %s", f, accepted, total, problem)
		}
	}
}

// fastPathSnippets are inputs on the edges of the fast path's subset: each
// must either be left to goccy or read exactly as goccy reads it.
var fastPathSnippets = []string{
	"a: 1\n",
	"a: 1",
	"---\na: 1\n",
	"--- # c\na: 1\n",
	"---\n# only a comment\n",
	"",
	"# c\n\n",
	"a: b\n  # deeper comment\nc: d\n",
	"a: b\n# comment\nc: d\n",
	"a:\n  b: c\n  d: e\nf: g\n",
	"a:\n- 1\n- 2\nb: 3\n",
	"a:\n  - 1\n  - 2\nb: 3\n",
	"a:\n  - x: 1\n    y: 2\n  - z: 3\nb: 4\n",
	"- a\n- b\n",
	"a: [1, 2, three]\n",
	"a: []\nb: {}\n",
	"a: [ 1 , 2 ]\n",
	"a: {b: c, d: [e, f], g: {h: i}}\n",
	"a: {b: 1,c: 2}\n",
	"a: [a,b]\n",
	"a: [a, b,]\n",
	"a: {b: }\n",
	"a: {b}\n",
	"a: [b: c]\n",
	"a: {b: c:d}\n",
	"a: {b: http://x/y}\n",
	"a: [http://x/y, 'q', \"r\"]\n",
	"a: [x # not a comment]\n",
	"a: [x #c]\n",
	"a: [x, [y, [z]]]\n",
	"a: b # c\n",
	"a: b \n",
	"a:\n  b: c  \nd: 0 \n",
	"a: b#c\n",
	"a: 'b' # c\n",
	"a: 'b'#c\n",
	"a: 'it''s'\n",
	"a: ''\n",
	"a: \"\"\n",
	"a: \"x\\ty\\n\\\\\\\"\\/\"\n",
	"a: \"\\u00e9\"\n",
	"a: \"\\x41\"\n",
	"a: \"multi\n  line\"\n",
	"a: 'multi\n  line'\n",
	"a: b: c\n",
	"a: b:\n",
	"a: b:c\n",
	"a: http://x:80/y\n",
	"a: local:import/x.qcow2\n",
	"a: plain\n  continued\n",
	"a: plain\nb:\n",
	"a:\n",
	"a:\nb: 1\n",
	"a: ~\n",
	"a: null\nb: Null\nc: NULL\n",
	"a: true\nb: False\nc: TRUE\nd: yes\ne: no\nf: on\n",
	"a: 0\nb: 007\nc: 08\nd: 0x1F\ne: 0o17\nf: 0b101\ng: -3\nh: +4\ni: 1_000\n",
	"a: 1.5\nb: -2.5e3\nc: .5\nd: 5.\ne: 1e5\nf: 1.2.3\n",
	"a: .inf\nb: -.Inf\nc: .NaN\nd: .nan\n",
	"a: 99999999999999999999\nb: 18446744073709551615\nc: 18446744073709551616\nd: 9223372036854775807\ne: 9223372036854775808\n",
	"a: -9223372036854775808\nb: -9223372036854775809\n",
	"a: 123456789012345678\nb: 1234567890123456789\n",
	"1: a\ntrue: b\nnull: c\n",
	"a: 2024-01-02\n",
	"a: -\n",
	"a: -x\n",
	"a: - x\n",
	"a: <<\n",
	"<<: {a: 1}\n",
	"a: &x 1\nb: *x\n",
	"a: !!str 1\n",
	"a: |\n  line1\n  line2\n",
	"a: |-\n  line1\n  line2\n",
	"a: |+\n  line1\n\n",
	"a: |\n  line1\n\n  line3\n\n\nb: 1\n",
	"a: |\n\n  after blank\n",
	"a: |\n  x\n    more indented\n  y\n",
	"a: |\n    x\n  y\n",
	"a: |\n  x\n  \n  y\n",
	"a: |\n  # not a comment\n  x\n",
	"a: |\n  x\n# comment\nb: 1\n",
	"a: |\n  x",
	"a: |\nb: 1\n",
	"a: | # c\n  x\n",
	"a: |2\n  x\n",
	"a: >\n  folded\n  text\n",
	"- |\n  x\n- y\n",
	"a:\n  - |\n    x\n  - y\n",
	"a:\n  b: |\n    x\n  c: 1\n",
	"a:\n    b: 1\n    c: 2\n",
	"a:\n    b: 1\n  c: 2\n",
	"a:\n  b: 1\n   c: 2\n",
	"a:\n  -   b: 1\n      c: 2\n",
	"a:\n  - b: 1\n  c: 2\n",
	"a:\n- b: 1\n  c: 2\nd: 3\n",
	"a:\n  - b:\n    - 1\n    c: 2\n",
	"a:\n  - - 1\n",
	"a:\n  -\n    b: 1\n",
	"a:\n  - # c\n    b: 1\n",
	"a: b\n...\n",
	"a: b\n....\n",
	"a: b\n---x: 1\n",
	"---00",
	"a: x{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n",
	"a: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['\n",
	"---x\n",
	"...\n",
	"# c\n...\n",
	"a: 'x' y\n",
	"a: [x] y\n",
	"a: {b: c} # ok\n",
	"a: {b: c}#no\n",
	"a: é\nb: [é, {c: é}]\nc: {d: é, e: f}\n",
	"a: [éé, x, 'é', {é: 1}, {b: é, c: d}, \"ü\", [ä, b]]\nb: ü # é\nc: [a, b]\n",
	"- é: [ü, x]\n  b: [c, ä]\n",
	"é: 1\n",
	"a b: 1\n",
	"a : 1\n",
	"a.b/c-d_e: 1\n",
	"-a: 1\n",
	"_a: 1\n",
	"a: b\n  c: d\n",
	"a:\n  b\n",
	"a: x@y\nb: @x\nc: `x`\n",
	"a: x, y\nb: x]\nc: x}\nd: x{y}\n",
	"a: [x]]\n",
	"a: 'x\ty'\n",
	"a: \"x\\\n  y\"\n",
	"a: #c\n  b: 1\n",
	"a:   # c\n  b: 1\n",
	"a:\n  # c\n  b: 1\n",
	"a:\n\n  b: 1\n\n",
	"  a: 1\n",
	"a: 1\n  \n",
	"a: 1\nb: 2\na: 3\n",
	"%YAML 1.2\n---\na: 1\n",
	"? a\n: b\n",
	"a: ?\n",
	"a: x?\n",
	"a: '#'\n",
	"a: \"\\0\\a\\b\\v\\f\\r\\e\\ \"\n",
	"a: [\"x\", 'y', z]\n",
	"a: {\"b\": 1}\n",
	"a: [\"b\": 1]\n",
	"a: {b: \"c\", d: 'e'}\n",
	"a: [-1, -x, - y]\n",
	"a: [~, null, true, 1.5, 0x10]\n",
	"a: {b: [1, 2], c: {}}\n",
	"kind: x\n---\nkind: y\n",
	"a: 20G\nb: 1.5G\nc: 10.0.0.1/24\nd: 1e5\ne: 0x1p-2\nf: 1_0\ng: 1-2\nh: 1.0.0\ni: 12:30\n",
	"a: 0o\nb: 0x\nc: 1__2\nd: 0b2\ne: 0xG\nf: 1.5e+3\ng: 1E3\nh: 0.\ni: 00\nj: 0_1\n",
	"a: [20G, 1e5, 0x10, 1.5, 1_000, 007, 08]\n",
	"a: {b: 20G, c: 1.5e3}\n",
	"a: 999999999999999999\nb: 1000000000000000000\n",
}

// TestFastPathDepthAndTokenBounds checks that the fast path gives deep or
// long documents to goccy, whose caps then apply.
func TestFastPathDepthAndTokenBounds(t *testing.T) {
	var deep strings.Builder
	for i := range fastMaxDepth + 1 {
		deep.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	deep.WriteString(strings.Repeat(" ", fastMaxDepth+1) + "v: 1\n")
	var long strings.Builder
	for i := 0; i < fastMaxTokens; i++ {
		fmt.Fprintf(&long, "k%d: v\n", i)
	}
	for name, text := range map[string]string{
		"deep block":  deep.String(),
		"deep flow":   "a: " + strings.Repeat("[", fastMaxDepth+1) + strings.Repeat("]", fastMaxDepth+1) + "\n",
		"many tokens": long.String(),
	} {
		if _, ok := fastParseUnguarded(text, 0, nil); ok {
			t.Errorf("%s: the fast path accepted it instead of leaving it to goccy's caps", name)
		}
	}
}

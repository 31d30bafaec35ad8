package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits that keep hostile input cheap. Files and documents are bounded in
// size before the YAML parser runs and flow nesting is bounded by a byte
// scan; the parser is linear in its input, and the tree it returns is
// bounded in nodes, depth and alias expansion while it is converted, before
// anything walks it.
const (
	// MaxFileSize is the largest manifest file read, in bytes.
	MaxFileSize = 1 << 20
	// MaxDocumentTokens bounds the YAML tokens of one document, counted as
	// the parser's nodes as written (a scalar, a mapping, a list, an alias):
	// a manifest has a few hundred; a block scalar such as userData is one.
	MaxDocumentTokens = 5000
	// MaxDepth bounds the nesting of mappings and sequences in a document.
	MaxDepth = 32
	// MaxNodes bounds the nodes of one document after alias expansion.
	MaxNodes = 20000
	// MaxDocumentSize bounds one document in bytes, so that lexing it stays
	// cheap whatever it holds.
	MaxDocumentSize = 256 << 10
)

type nodeKind uint8

const (
	nullNode nodeKind = iota
	scalarNode
	mapNode
	seqNode
)

// scalarType is a scalar's type, as YAML 1.2 resolves plain scalars.
type scalarType uint8

const (
	tNone scalarType = iota // not a scalar
	tString
	tInt
	tFloat
	tBool
	tNull
)

// String names the type for error messages.
func (t scalarType) String() string {
	switch t {
	case tString:
		return "string"
	case tInt:
		return "integer"
	case tFloat:
		return "number"
	case tBool:
		return "boolean"
	case tNull:
		return "null"
	}
	return ""
}

// yNode is the decoded YAML tree the typed decoder walks: positions kept,
// aliases resolved (shared, never copied), merge keys applied. A manifest
// has tens of nodes per document, so the struct is kept small.
type yNode struct {
	kind nodeKind
	typ  scalarType // scalar type (tString, tInt, ...)
	bval bool
	size int32 // nodes in this subtree, aliases expanded (saturating)
	line int
	col  int
	text string // scalar text (the value for strings)
	ival int64
	fval float64
	keys []*yNode // mapping keys (scalars), in order
	// vals holds a mapping's values (vals[i] belongs to keys[i]) or a
	// sequence's items.
	vals []*yNode
}

// describe names the node's type for error messages ("a mapping", "integer 20").
func (n *yNode) describe() string {
	switch n.kind {
	case nullNode:
		return "null"
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	}
	switch n.typ {
	case tString:
		t := n.text
		if len(t) > 40 {
			t = t[:37] + "..."
		}
		return fmt.Sprintf("string %q", t)
	default:
		return n.typ.String() + " " + n.text
	}
}

// yDoc is one YAML document of a file.
type yDoc struct {
	index int // 0-based document index in the file
	line  int // line of its first line in the file
	root  *yNode
}

// posError is an error at a position in a file, before the path is known.
type posError struct {
	line, col int
	path      string
	msg       string
}

// parseYAML splits data into documents and parses each one, returning the
// non-empty documents and every problem found. It never panics and bounds its
// work as described at the limits above.
func parseYAML(data []byte) (docs []yDoc, errs []posError) {
	if len(data) > MaxFileSize {
		return nil, []posError{{msg: fmt.Sprintf("file is %d bytes, larger than the %d-byte limit for a manifest", len(data), MaxFileSize)}}
	}
	data = normalizeLineBreaks(data)
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line, col := lineCol(data, i)
		return nil, []posError{{line: line, col: col, msg: "binary file: contains a NUL byte, not YAML text"}}
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		line, col := lineCol(data, i)
		return nil, []posError{{line: line, col: col, msg: "not valid UTF-8 text"}}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	chunks := splitDocuments(data)
	if docs, errs, ok := parseFile(string(data), chunks); ok {
		return docs, errs
	}
	for i, chunk := range chunks {
		root, perrs := parseDocument(chunk.text, chunk.line-1)
		errs = append(errs, perrs...)
		if root != nil && root.kind != nullNode {
			docs = append(docs, yDoc{index: i, line: chunk.line, root: root})
		}
	}
	return docs, errs
}

// normalizeLineBreaks turns YAML's other line breaks, CR LF and a lone CR,
// into LF (as YAML itself does inside scalars), so that every line count
// agrees: the document splitter's, the YAML parsers' and an editor's.
func normalizeLineBreaks(data []byte) []byte {
	if bytes.IndexByte(data, '\r') < 0 {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		if data[i] != '\r' {
			out = append(out, data[i])
			continue
		}
		out = append(out, '\n')
		if i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
	}
	return out
}

type chunk struct {
	text string
	line int
}

// splitDocuments cuts the text at document markers ("---" at the start of a
// line), which YAML recognises even inside block scalars. Each chunk keeps its
// marker line, so line numbers inside it are offset by chunk.line-1.
func splitDocuments(data []byte) []chunk {
	var chunks []chunk
	text := string(data) // one copy for the file; chunks are slices of it
	start, startLine, line := 0, 1, 1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := data[off:next]
		if off > start && bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\n' || l[3] == '\r') {
			chunks = append(chunks, chunk{text: text[start:off], line: startLine})
			start, startLine = off, line
		}
		off = next
		line++
	}
	chunks = append(chunks, chunk{text: text[start:], line: startLine})
	return chunks
}

func lineCol(data []byte, off int) (int, int) {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

// parseFile parses the whole file with one parser, which costs less than one
// per document. It reports !ok, and the caller parses each chunk on its own,
// when a chunk is over a limit checked before parsing or the file has a
// syntax error: the parser stops at the first, and every document's own
// errors are wanted.
func parseFile(text string, chunks []chunk) (docs []yDoc, errs []posError, ok bool) {
	for _, ch := range chunks {
		if len(ch.text) > MaxDocumentSize {
			return nil, nil, false
		}
		if _, _, depth := flowDepth(ch.text); depth > MaxDepth {
			return nil, nil, false
		}
	}
	defer func() {
		if r := recover(); r != nil {
			docs, errs, ok = nil, nil, false
		}
	}()
	src := &source{text: text}
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, errs, true
			}
			return nil, nil, false
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		// The chunk the document is in: the last one starting at or before it.
		i := sort.Search(len(chunks), func(i int) bool { return chunks[i].line > root.Line }) - 1
		if i < 0 {
			return nil, nil, false
		}
		c := &converter{src: src, firstLine: chunks[i].line}
		y := c.convert(root, 0)
		errs = append(errs, c.errs...)
		if y.kind != nullNode {
			docs = append(docs, yDoc{index: i, line: chunks[i].line, root: y})
		}
	}
}

// parseDocument parses one document chunk whose first line is line lineOff+1
// of the file; every position it returns is a position in the file.
func parseDocument(text string, lineOff int) (root *yNode, errs []posError) {
	if len(text) > MaxDocumentSize {
		return nil, []posError{{line: lineOff + 1, col: 1, msg: fmt.Sprintf("document is %d bytes, larger than the %d-byte limit for one manifest", len(text), MaxDocumentSize)}}
	}
	defer func() {
		// The parser is third-party code fed hostile input: a panic there
		// must become an error for this document, never a crash.
		if r := recover(); r != nil {
			root = nil
			errs = append(errs, posError{line: lineOff + 1, col: 1, msg: fmt.Sprintf("YAML parser failed on this document: %v", r)})
		}
	}()
	if line, col, depth := flowDepth(text); depth > MaxDepth {
		return nil, []posError{{line: line + lineOff, col: col, msg: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}}
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, []posError{syntaxError(text, lineOff, err)}
	}
	// splitDocuments gives one document per chunk; a second one here comes
	// from a "..." end marker followed by content.
	const afterEnd = "content after a document end marker (...); start a new document with ---"
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil && len(more.Content) > 0:
		n := more.Content[0]
		return nil, []posError{{line: n.Line + lineOff, col: n.Column, msg: afterEnd}}
	case err != nil && !errors.Is(err, io.EOF):
		pe := syntaxError(text, lineOff, err)
		if strings.Contains(pe.msg, "<document start>") {
			pe.msg = afterEnd
		}
		return nil, []posError{pe}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	c := &converter{src: &source{text: text}, lineOff: lineOff}
	root = c.convert(doc.Content[0], 0)
	return root, c.errs
}

// syntaxError turns the parser's error into one at a file position. The
// parser names only a line (for its own errors, as opposed to its scanner's,
// counted from 0, and the start of the construct it was reading rather than
// where it stopped), so the position is found in the text.
func syntaxError(text string, lineOff int, err error) posError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		name = strings.TrimSuffix(name, "' referenced")
		line, col := 1, 1
		if i := strings.Index(text, "*"+name); i >= 0 {
			line, col = lineCol([]byte(text), i)
		}
		return posError{line: line + lineOff, col: col, msg: fmt.Sprintf("alias *%s names no anchor defined before it", name)}
	}
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	if strings.HasPrefix(msg, "did not find expected") {
		line++ // the parser's own errors count lines from 0
	}
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		line = len(lines)
	}
	for line > 1 && strings.TrimSpace(lines[line-1]) == "" {
		line--
	}
	if strings.HasPrefix(msg, "exceeded max depth") {
		return posError{line: line + lineOff, col: 1, msg: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}
	}
	msg = "YAML syntax error: " + msg
	if strings.Contains(msg, "']'") || strings.Contains(msg, "'}'") || strings.Contains(msg, "end of stream") {
		if l, c := unclosed(text); l > 0 {
			return posError{line: l + lineOff, col: c, msg: msg}
		}
	}
	if strings.Contains(msg, "expected key") || strings.Contains(msg, "'-' indicator") {
		line = strayLine(lines, line)
	}
	return posError{line: line + lineOff, col: syntaxColumn(lines[line-1], msg), msg: msg}
}

// unclosed is the position of the quote of a string left open at the end of
// text, or else of its innermost flow collection left open; 0, 0 if none.
func unclosed(text string) (line, col int) {
	type mark struct{ line, col int }
	var open []mark
	var quote mark
	q := scanFlow(text, func(i, line, lineStart int, ch byte) bool {
		here := mark{line, utf8.RuneCountInString(text[lineStart:i]) + 1}
		switch ch {
		case '"', '\'':
			quote = here
		case '[', '{':
			open = append(open, here)
		default:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
		return true
	})
	switch {
	case q != 0:
		return quote.line, quote.col
	case len(open) > 0:
		return open[len(open)-1].line, open[len(open)-1].col
	}
	return 0, 0
}

// scanFlow walks text's bytes outside quoted strings and comments, calling
// visit with each flow bracket ([ { ] }) and each quote that opens a string
// (at the start of a token): its byte index, its line, and the index where
// that line starts. visit returns false to stop. The quote of a string
// still open where the walk ends is returned, else 0.
func scanFlow(text string, visit func(i, line, lineStart int, ch byte) bool) (openQuote byte) {
	line, lineStart, comment := 1, 0, false
	var q byte
	for i := 0; i < len(text); i++ {
		ch := text[i]
		if ch == '\n' {
			line, lineStart, comment = line+1, i+1, false
			continue
		}
		if comment {
			continue
		}
		if q != 0 {
			switch {
			case q == '"' && ch == '\\':
				i++
			case ch == q:
				q = 0
			}
			continue
		}
		prev := byte(' ')
		if i > lineStart {
			prev = text[i-1]
		}
		switch ch {
		case '#':
			comment = prev == ' ' || prev == '\t'
			continue
		case '"', '\'':
			if prev != ' ' && prev != '\t' && prev != '[' && prev != '{' && prev != ',' && prev != ':' {
				continue
			}
			q = ch
		case '[', '{', ']', '}':
		default:
			continue
		}
		if !visit(i, line, lineStart, ch) {
			break
		}
	}
	return q
}

// strayLine finds, after the block mapping (or list) starting at line, the
// first line at its indentation that is not one of its keys (or items).
func strayLine(lines []string, line int) int {
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	want := indent(lines[line-1])
	seq := strings.HasPrefix(strings.TrimSpace(lines[line-1]), "-")
	for i := line; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || t[0] == '#' || indent(lines[i]) != want {
			continue
		}
		if strings.HasPrefix(t, "-") != seq {
			return i + 1
		}
	}
	return line
}

// syntaxColumn finds on its line where the problem the parser names is: a
// colon where none may be, a character no token starts with, or else the
// line's first character.
func syntaxColumn(line, msg string) int {
	at := -1
	switch {
	case strings.Contains(msg, "values are not allowed"):
		for i := len(line) - 1; i >= 0 && at < 0; i-- {
			if line[i] == ':' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t') {
				at = i
			}
		}
	case strings.Contains(msg, "cannot start any token"):
		at = strings.IndexAny(line, "\t@`%")
	}
	if at >= 0 {
		return utf8.RuneCountInString(line[:at]) + 1
	}
	return len(line) - len(strings.TrimLeft(line, " \t")) + 1
}

// converter builds the yNode tree from the parser's nodes.
type converter struct {
	src *source // the text parsed, to find a mapping's colon
	// firstLine is the first line of the document when the parser read the
	// whole file: an alias to an anchor before it is refused, as when the
	// document is parsed alone.
	firstLine int
	shared    map[*yaml.Node]*yNode // anchored nodes converted
	open      map[*yaml.Node]bool   // anchored nodes being converted
	errs      []posError
	total     int  // nodes produced, aliases expanded
	written   int  // nodes as written, aliases not expanded
	blown     bool // a budget exceeded (reported once)
	lineOff   int  // added to every line: the document's offset in its file
}

func (c *converter) fail(n *yaml.Node, format string, args ...any) {
	line, col := c.pos(n)
	c.errs = append(c.errs, posError{line: line, col: col, msg: fmt.Sprintf(format, args...)})
}

func (c *converter) count(n *yaml.Node, expanded int) bool {
	if c.blown {
		return false
	}
	c.total += expanded
	c.written++
	switch {
	case c.written > MaxDocumentTokens:
		c.blown = true
		c.fail(n, "document has more than %d YAML tokens; a manifest is far smaller, split it", MaxDocumentTokens)
		return false
	case c.total > MaxNodes:
		c.blown = true
		c.fail(n, "document expands to more than %d nodes (YAML aliases?); refusing to expand it", MaxNodes)
		return false
	}
	return true
}

func (c *converter) pos(n *yaml.Node) (int, int) {
	if n == nil || n.Line == 0 {
		return c.lineOff + 1, 1
	}
	return n.Line + c.lineOff, n.Column
}

func nullY(line, col int) *yNode {
	return &yNode{kind: nullNode, typ: tNull, text: "null", line: line, col: col, size: 1}
}

func (c *converter) convert(n *yaml.Node, depth int) *yNode {
	if n == nil || c.blown {
		return &yNode{kind: nullNode, typ: tNull, size: 1}
	}
	line, col := c.pos(n)
	if n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		col = c.afterProperties(n, line, col)
	}
	if depth > MaxDepth {
		c.fail(n, "nesting deeper than %d levels", MaxDepth)
		c.blown = true
		return nullY(line, col)
	}
	if y, ok := c.shared[n]; ok {
		return y // an anchored node met again through a merge
	}
	if n.Anchor != "" {
		if c.open == nil {
			c.open = map[*yaml.Node]bool{}
		}
		c.open[n] = true
		defer delete(c.open, n)
	}
	var y *yNode
	switch n.Kind {
	case yaml.AliasNode:
		if c.open[n.Alias] || n.Alias.Line < c.firstLine {
			// The parser lets an alias name the anchor it sits in, or one
			// in an earlier document of the file.
			c.fail(n, "alias *%s names no anchor defined before it", n.Value)
			return nullY(line, col)
		}
		target := c.convert(n.Alias, depth)
		if !c.count(n, int(target.size)) {
			return nullY(line, col)
		}
		return target
	case yaml.ScalarNode:
		if !c.count(n, 1) {
			return nullY(line, col)
		}
		y = c.scalar(n, line, col)
	case yaml.MappingNode:
		if !c.count(n, 1) {
			return nullY(line, col)
		}
		if n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0 {
			line, col = c.colonAfter(n.Content[0], line, col)
		}
		y = c.mapping(n, line, col, depth)
	case yaml.SequenceNode:
		if !c.count(n, 1) {
			return nullY(line, col)
		}
		y = &yNode{kind: seqNode, line: line, col: col, size: 1}
		for _, item := range n.Content {
			child := c.convert(item, depth+1)
			y.vals = append(y.vals, child)
			y.size = satAdd(y.size, int64(child.size))
		}
		c.checkTag(n, y)
	default:
		c.fail(n, "unsupported YAML construct")
		return nullY(line, col)
	}
	if n.Anchor != "" {
		if c.shared == nil {
			c.shared = map[*yaml.Node]*yNode{}
		}
		c.shared[n] = y
	}
	return y
}

// scalar types a scalar as the parser resolved it (YAML 1.2's core schema;
// dates stay strings), or as its explicit tag says when the value agrees.
func (c *converter) scalar(n *yaml.Node, line, col int) *yNode {
	tag := n.Tag
	if n.Style&yaml.TaggedStyle != 0 {
		switch tag {
		case "!!str":
			return &yNode{kind: scalarNode, typ: tString, text: n.Value, line: line, col: col, size: 1}
		case "!!int", "!!float", "!!bool", "!!null":
			got := plainTag(n.Value)
			if got != tag && !(tag == "!!float" && got == "!!int") {
				c.fail(n, "value does not match its tag %s", tag)
			}
			tag = got
		default:
			c.fail(n, "unsupported YAML tag %s", tag)
			tag = "!!str"
		}
	}
	switch tag {
	case "!!null":
		return nullY(line, col)
	case "!!bool":
		return &yNode{kind: scalarNode, typ: tBool, text: n.Value, bval: strings.EqualFold(n.Value, "true"), line: line, col: col, size: 1}
	case "!!int":
		y := &yNode{kind: scalarNode, typ: tInt, text: n.Value, line: line, col: col, size: 1}
		plain := strings.ReplaceAll(n.Value, "_", "")
		if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
			y.ival = v
		} else {
			y.typ, y.fval = tFloat, parseFloat(plain)
		}
		return y
	case "!!float":
		return &yNode{kind: scalarNode, typ: tFloat, text: n.Value, fval: parseFloat(n.Value), line: line, col: col, size: 1}
	}
	return &yNode{kind: scalarNode, typ: tString, text: n.Value, line: line, col: col, size: 1}
}

// plainTag is the tag the parser would give value written plain.
func plainTag(value string) string {
	var n yaml.Node
	n.SetString(value)
	n.Style, n.Tag = 0, ""
	return n.ShortTag()
}

func parseFloat(text string) float64 {
	t := strings.ToLower(strings.ReplaceAll(text, "_", ""))
	switch strings.TrimLeft(t, "+-") {
	case ".inf":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case ".nan":
		return math.NaN()
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		return v
	}
	if u, err := strconv.ParseUint(t, 0, 64); err == nil {
		return float64(u)
	}
	return 0
}

func (c *converter) checkTag(n *yaml.Node, y *yNode) {
	if n.Style&yaml.TaggedStyle == 0 {
		return
	}
	switch {
	case n.Tag == "!!map" && y.kind == mapNode, n.Tag == "!!seq" && y.kind == seqNode:
	case n.Tag == "!!map" || n.Tag == "!!seq" || n.Tag == "!!str":
		c.fail(n, "value does not match its tag %s", n.Tag)
	default:
		c.fail(n, "unsupported YAML tag %s", n.Tag)
	}
}

// colonAfter is the position of the colon after a block mapping's first key,
// where the mapping is placed (it was so before this parser, and errors about
// a mapping point there); the key's own position when none is found.
func (c *converter) colonAfter(key *yaml.Node, line, col int) (int, int) {
	lineText, ok := c.line(key.Line)
	if !ok {
		return line, col
	}
	off := byteOffset(lineText, key.Column-1)
	var quote byte
	for i := off; i < len(lineText); i++ {
		ch := lineText[i]
		switch {
		case quote != 0:
			if quote == '"' && ch == '\\' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case (ch == '"' || ch == '\'') && i == off:
			quote = ch
		case ch == ':' && (i+1 == len(lineText) || lineText[i+1] == ' ' || lineText[i+1] == '\t'):
			return key.Line + c.lineOff, utf8.RuneCountInString(lineText[:i]) + 1
		}
	}
	return line, col
}

// source is the text the parser read, with its line offsets built when
// first needed.
type source struct {
	text  string
	lines []int
}

// line is the text of the parsed text's line n (from 1).
func (c *converter) line(n int) (string, bool) {
	s := c.src
	if s.lines == nil {
		s.lines = append(s.lines, 0)
		for i := 0; i < len(s.text); i++ {
			if s.text[i] == '\n' {
				s.lines = append(s.lines, i+1)
			}
		}
	}
	if n < 1 || n > len(s.lines) {
		return "", false
	}
	end := len(s.text)
	if n < len(s.lines) {
		end = s.lines[n] - 1
	}
	return s.text[s.lines[n-1]:end], true
}

// afterProperties is the position of a node's content after its tag and
// anchor ("!!str 100", "&d {...}"), where errors about its value point.
func (c *converter) afterProperties(n *yaml.Node, line, col int) int {
	text, ok := c.line(n.Line)
	if !ok {
		return col
	}
	off := byteOffset(text, n.Column-1)
	for off < len(text) && (text[off] == '!' || text[off] == '&') {
		for off < len(text) && text[off] != ' ' && text[off] != '\t' {
			off++
		}
		for off < len(text) && (text[off] == ' ' || text[off] == '\t') {
			off++
		}
	}
	if off >= len(text) || text[off] == '#' {
		return col // the content starts on a later line
	}
	return utf8.RuneCountInString(text[:off]) + 1
}

// byteOffset is the byte offset of the rune at index runes of s.
func byteOffset(s string, runes int) int {
	for i := range s {
		if runes == 0 {
			return i
		}
		runes--
	}
	return len(s)
}

func (c *converter) mapping(n *yaml.Node, line, col, depth int) *yNode {
	y := &yNode{kind: mapNode, line: line, col: col, size: 1}
	var merges []*yNode
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.Tag == "!!merge" {
			merges = append(merges, c.convert(vn, depth+1))
			continue
		}
		key := c.convert(kn, depth+1)
		if key.kind == mapNode || key.kind == seqNode {
			c.errs = append(c.errs, posError{line: key.line, col: key.col, msg: "mapping keys must be scalars"})
			continue
		}
		val := c.convert(vn, depth+1)
		y.keys = append(y.keys, key)
		y.vals = append(y.vals, val)
		y.size = satAdd(y.size, int64(val.size)+1)
	}
	c.checkTag(n, y)
	for _, m := range merges {
		c.merge(y, m)
	}
	return y
}

// merge adds the keys of a merge key's mapping (or list of mappings) that y
// does not have.
func (c *converter) merge(y, m *yNode) {
	var sources []*yNode
	switch m.kind {
	case mapNode:
		sources = []*yNode{m}
	case seqNode:
		sources = m.vals
	}
	if len(sources) == 0 && m.kind != seqNode {
		c.errs = append(c.errs, posError{line: m.line, col: m.col, msg: "merge key << needs a mapping or a list of mappings"})
		return
	}
	for _, src := range sources {
		if src.kind != mapNode {
			c.errs = append(c.errs, posError{line: src.line, col: src.col, msg: "merge key << needs a mapping or a list of mappings"})
			continue
		}
		for i, k := range src.keys {
			if y.hasKey(k.text) {
				continue // explicit keys win over merged ones
			}
			y.keys = append(y.keys, k)
			y.vals = append(y.vals, src.vals[i])
			y.size = satAdd(y.size, int64(src.vals[i].size)+1)
		}
	}
}

// flowDepth scans the bytes for the deepest nesting of flow collections
// ([ and {) outside quotes and comments, stopping once it passes MaxDepth.
// It runs before the parser, so that such input is refused cheaply.
func flowDepth(text string) (line, col, depth int) {
	scanFlow(text, func(i, l, lineStart int, ch byte) bool {
		switch ch {
		case '[', '{':
			depth++
			if depth > MaxDepth {
				line, col = l, i-lineStart+1
				return false
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
		return true
	})
	if line == 0 {
		return 0, 0, 0
	}
	return line, col, depth
}

// satAdd adds b to a node count, saturating at MaxInt32.
func satAdd(a int32, b int64) int32 {
	if s := int64(a) + b; s < math.MaxInt32 {
		return int32(s)
	}
	return math.MaxInt32
}

func (n *yNode) hasKey(k string) bool {
	for _, key := range n.keys {
		if key.text == k {
			return true
		}
	}
	return false
}

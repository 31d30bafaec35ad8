package manifest

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Limits that keep hostile input cheap. The YAML parser underneath is
// quadratic in the number of tokens of a document and in its nesting depth,
// so both are bounded before it runs; alias expansion is bounded while the
// tree is built, before anything walks it.
const (
	// MaxFileSize is the largest manifest file read, in bytes.
	MaxFileSize = 1 << 20
	// MaxDocumentTokens bounds the YAML tokens of one document (a manifest
	// has a few hundred; a block scalar such as userData is one token).
	MaxDocumentTokens = 5000
	// MaxDepth bounds the nesting of mappings and sequences in a document.
	MaxDepth = 32
	// MaxNodes bounds the nodes of one document after alias expansion.
	MaxNodes = 20000
	// MaxDocumentSize bounds one document in bytes, so that lexing it stays
	// cheap whatever it holds.
	MaxDocumentSize = 256 << 10
	// maxFileParseCost bounds the YAML parser's work on one file. The parser
	// is quadratic in a document's tokens, so a file of many documents just
	// under MaxDocumentTokens took seconds (2 s of CPU for a 1 MiB file of
	// them, BenchmarkHostileFile). Each document it parses costs its token
	// count squared, and a file may spend this much: four documents at the
	// token limit, or a thousand manifests of a few hundred tokens that the
	// fast path does not read.
	maxFileParseCost = 4 * MaxDocumentTokens * MaxDocumentTokens
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
// work as described at MaxDocumentTokens.
//
// The trees of the documents read by the fast path live in arena: they must
// not be used once the arena is reused.
func parseYAML(data []byte, arena *fastArena) (docs []yDoc, errs []posError) {
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
	budget := maxFileParseCost
	for i, chunk := range splitDocuments(data) {
		root, perrs := parseDocument(chunk.text, chunk.line-1, arena, &budget)
		errs = append(errs, perrs...)
		if root != nil && root.kind != nullNode {
			docs = append(docs, yDoc{index: i, line: chunk.line, root: root})
		}
		if budget < 0 {
			break // the rest of the file is not read (see maxFileParseCost)
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

// parseDocument parses one document chunk whose first line is line lineOff+1
// of the file; every position it returns is a position in the file.
//
// budget is what is left of the file's maxFileParseCost; parseDocument sets
// it below zero when the document would exceed it, and the file's remaining
// documents must then be left unread.
func parseDocument(text string, lineOff int, arena *fastArena, budget *int) (*yNode, []posError) {
	if len(text) > MaxDocumentSize {
		return nil, []posError{{line: lineOff + 1, col: 1, msg: fmt.Sprintf("document is %d bytes, larger than the %d-byte limit for one manifest", len(text), MaxDocumentSize)}}
	}
	if root, ok := fastParse(text, lineOff, arena); ok {
		return root, nil
	}
	return parseDocumentGoccy(text, lineOff, budget)
}

// parseDocumentGoccy parses one document chunk with goccy/go-yaml, within
// the caps; it is the reference for whatever fastParse leaves to it.
func parseDocumentGoccy(text string, lineOff int, budget *int) (root *yNode, errs []posError) {
	defer func() {
		// The parser is third-party code fed hostile input: a panic there
		// must become an error for this document, never a crash.
		if r := recover(); r != nil {
			root = nil
			errs = append(errs, posError{line: lineOff + 1, col: 1, msg: fmt.Sprintf("YAML parser failed on this document: %v", r)})
		}
	}()
	defer func() {
		for i := range errs {
			errs[i].line += lineOff
		}
	}()
	if line, col, depth := flowDepth(text); depth > MaxDepth {
		return nil, []posError{{line: line, col: col, msg: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}}
	}
	tokens := lexTokens(text)
	if tk, depth := tooDeep(tokens); tk != nil {
		return nil, []posError{{line: tk.Position.Line, col: tk.Position.Column,
			msg: fmt.Sprintf("nesting deeper than %d levels (%d)", MaxDepth, depth)}}
	}
	if len(tokens) > MaxDocumentTokens {
		tk := tokens[MaxDocumentTokens]
		return nil, []posError{{line: tk.Position.Line, col: tk.Position.Column,
			msg: fmt.Sprintf("document has more than %d YAML tokens; a manifest is far smaller, split it", MaxDocumentTokens)}}
	}
	if tk := tokens.InvalidToken(); tk != nil {
		return nil, []posError{{line: tk.Position.Line, col: tk.Position.Column, msg: "YAML syntax error: " + tk.Error}}
	}
	cost := len(tokens) * len(tokens)
	if cost > *budget {
		*budget = -1
		return nil, []posError{{line: 1, col: 1, msg: fmt.Sprintf("file holds more YAML than is parsed in one file (about four documents of %d tokens); split it into smaller files; the rest of this file is not read", MaxDocumentTokens)}}
	}
	*budget -= cost
	file, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, []posError{syntaxError(err)}
	}
	if len(file.Docs) == 0 {
		return nil, nil
	}
	if len(file.Docs) > 1 {
		// splitDocuments gives one document per chunk; a second one here comes
		// from a "..." end marker followed by content.
		for _, d := range file.Docs[1:] {
			if d.Body != nil {
				tk := d.Body.GetToken()
				return nil, []posError{{line: tk.Position.Line, col: tk.Position.Column, msg: "content after a document end marker (...); start a new document with ---"}}
			}
		}
	}
	c := &converter{anchors: map[string]*yNode{}, lineOff: lineOff}
	root = c.convert(file.Docs[0].Body, 0)
	for i := range c.errs {
		c.errs[i].line -= lineOff // the deferred shift adds it back
	}
	return root, c.errs
}

// flowDepth scans the bytes for the deepest nesting of flow collections
// ([ and {) outside quotes and comments, stopping once it passes MaxDepth.
// It runs before the lexer, which is slow on such input.
func flowDepth(text string) (line, col, depth int) {
	line, lineStart := 1, 0
	var quote byte
	comment := false
	for i := 0; i < len(text); i++ {
		ch := text[i]
		if ch == '\n' {
			line, lineStart, comment = line+1, i+1, false
			continue
		}
		if comment {
			continue
		}
		if quote != 0 {
			switch {
			case quote == '"' && ch == '\\':
				i++
			case ch == quote:
				quote = 0
			}
			continue
		}
		prev := byte(' ')
		if i > lineStart {
			prev = text[i-1]
		}
		startsToken := prev == ' ' || prev == '\t' || prev == '[' || prev == '{' || prev == ',' || prev == ':'
		switch ch {
		case '#':
			comment = prev == ' ' || prev == '\t' || i == lineStart
		case '"', '\'':
			if startsToken || i == lineStart {
				quote = ch
			}
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return line, i - lineStart + 1, depth
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0, 0, 0
}

func lexTokens(text string) token.Tokens {
	return lexer.Tokenize(text)
}

// tooDeep estimates the nesting depth from the tokens: flow collections
// opened and not closed, plus block levels from the indentation stack and
// sequence entries. It returns the token where the limit is passed.
func tooDeep(tokens token.Tokens) (*token.Token, int) {
	flow := 0
	var indents []int
	lastLine := -1
	for _, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			if flow > 0 {
				flow--
			}
		case token.CommentType:
			continue
		}
		if flow == 0 && (tk.Position.Line != lastLine || tk.Type == token.SequenceEntryType) {
			col := tk.Position.Column
			for len(indents) > 0 && indents[len(indents)-1] >= col {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, col)
		}
		lastLine = tk.Position.Line
		if d := flow + len(indents); d > MaxDepth {
			return tk, d
		}
	}
	return nil, 0
}

func syntaxError(err error) posError {
	type tokenError interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if te, ok := err.(tokenError); ok && te.GetToken() != nil {
		tk := te.GetToken()
		return posError{line: tk.Position.Line, col: tk.Position.Column, msg: "YAML syntax error: " + te.GetMessage()}
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return posError{line: 1, col: 1, msg: "YAML syntax error: " + msg}
}

// converter builds the yNode tree from the parser's AST.
type converter struct {
	anchors map[string]*yNode
	errs    []posError
	total   int  // nodes produced, aliases expanded
	blown   bool // alias budget exceeded (reported once)
	lineOff int  // added to every line: the document's offset in its file
}

func (c *converter) fail(tk *token.Token, format string, args ...any) {
	line, col := c.pos(tk)
	c.errs = append(c.errs, posError{line: line, col: col, msg: fmt.Sprintf(format, args...)})
}

func (c *converter) count(tk *token.Token, n int) bool {
	if c.blown {
		return false
	}
	c.total += n
	if c.total > MaxNodes {
		c.blown = true
		c.fail(tk, "document expands to more than %d nodes (YAML aliases?); refusing to expand it", MaxNodes)
		return false
	}
	return true
}

func (c *converter) pos(tk *token.Token) (int, int) {
	if tk == nil {
		return c.lineOff + 1, 1
	}
	return tk.Position.Line + c.lineOff, tk.Position.Column
}

func (c *converter) convert(n ast.Node, depth int) *yNode {
	if n == nil || c.blown {
		return &yNode{kind: nullNode, typ: tNull, size: 1}
	}
	if depth > MaxDepth*2 {
		c.fail(n.GetToken(), "nesting too deep")
		c.blown = true
		return &yNode{kind: nullNode, typ: tNull, size: 1}
	}
	line, col := c.pos(n.GetToken())
	switch v := n.(type) {
	case *ast.DocumentNode:
		return c.convert(v.Body, depth)
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
	case *ast.NullNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: nullNode, typ: tNull, line: line, col: col, text: "null", size: 1}
	case *ast.StringNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: scalarNode, typ: tString, text: v.Value, line: line, col: col, size: 1}
	case *ast.LiteralNode:
		c.count(v.GetToken(), 1)
		text := ""
		if v.Value != nil {
			text = v.Value.Value
		}
		return &yNode{kind: scalarNode, typ: tString, text: text, line: line, col: col, size: 1}
	case *ast.IntegerNode:
		c.count(v.GetToken(), 1)
		y := &yNode{kind: scalarNode, typ: tInt, text: v.GetToken().Value, line: line, col: col, size: 1}
		switch iv := v.Value.(type) {
		case int64:
			y.ival = iv
		case uint64:
			if iv > math.MaxInt64 {
				y.typ, y.fval = tFloat, float64(iv)
			} else {
				y.ival = int64(iv)
			}
		default:
			y.typ = tFloat
			y.fval, _ = strconv.ParseFloat(y.text, 64)
		}
		return y
	case *ast.FloatNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: scalarNode, typ: tFloat, text: v.GetToken().Value, fval: v.Value, line: line, col: col, size: 1}
	case *ast.InfinityNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: scalarNode, typ: tFloat, text: v.GetToken().Value, fval: v.Value, line: line, col: col, size: 1}
	case *ast.NanNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: scalarNode, typ: tFloat, text: v.GetToken().Value, fval: math.NaN(), line: line, col: col, size: 1}
	case *ast.BoolNode:
		c.count(v.GetToken(), 1)
		return &yNode{kind: scalarNode, typ: tBool, text: v.GetToken().Value, bval: v.Value, line: line, col: col, size: 1}
	case *ast.TagNode:
		return c.convertTag(v, depth)
	case *ast.AnchorNode:
		name := ""
		if v.Name != nil {
			name = v.Name.GetToken().Value
		}
		y := c.convert(v.Value, depth)
		c.anchors[name] = y
		return y
	case *ast.AliasNode:
		name := ""
		if v.Value != nil {
			name = v.Value.GetToken().Value
		}
		target, ok := c.anchors[name]
		if !ok {
			c.fail(v.GetToken(), "alias *%s names no anchor defined before it", name)
			return &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
		}
		if !c.count(v.GetToken(), int(target.size)) {
			return &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
		}
		return target
	case *ast.MappingNode:
		return c.convertMapping(v.Values, line, col, depth)
	case *ast.MappingValueNode:
		return c.convertMapping([]*ast.MappingValueNode{v}, line, col, depth)
	case *ast.SequenceNode:
		c.count(v.GetToken(), 1)
		y := &yNode{kind: seqNode, line: line, col: col, size: 1}
		for _, item := range v.Values {
			child := c.convert(item, depth+1)
			y.vals = append(y.vals, child)
			y.size = satAdd(y.size, int64(child.size))
		}
		return y
	case *ast.MergeKeyNode:
		c.fail(v.GetToken(), "merge key << is only allowed as a mapping key")
		return &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
	default:
		c.fail(n.GetToken(), "unsupported YAML construct (%s)", n.Type())
		return &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
	}
}

// satAdd adds b to a node count, saturating at MaxInt32.
func satAdd(a int32, b int64) int32 {
	if s := int64(a) + b; s < math.MaxInt32 {
		return int32(s)
	}
	return math.MaxInt32
}

func (c *converter) convertTag(v *ast.TagNode, depth int) *yNode {
	tag := v.Start.Value
	y := c.convert(v.Value, depth)
	switch tag {
	case "!!str":
		if y.kind == scalarNode || y.kind == nullNode {
			cp := *y
			cp.kind, cp.typ = scalarNode, tString
			if y.kind == nullNode && v.Value == nil {
				cp.text = ""
			}
			return &cp
		}
		c.fail(v.Start, "!!str applies to a scalar, not %s", y.describe())
	case "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq":
		// The parser already resolved the value; accept the tag when it agrees.
		want := map[string]scalarType{"!!int": tInt, "!!float": tFloat, "!!bool": tBool, "!!null": tNull}[tag]
		switch {
		case tag == "!!map" && y.kind != mapNode, tag == "!!seq" && y.kind != seqNode,
			want != tNone && y.typ != want && !(want == tFloat && y.typ == tInt):
			c.fail(v.Start, "value does not match its tag %s", tag)
		}
	default:
		c.fail(v.Start, "unsupported YAML tag %s", tag)
	}
	return y
}

func (c *converter) convertMapping(values []*ast.MappingValueNode, line, col, depth int) *yNode {
	c.count(nil, 1)
	y := &yNode{kind: mapNode, line: line, col: col, size: 1}
	var merges []*yNode
	for _, mv := range values {
		if mv == nil {
			continue
		}
		if mv.Key != nil && mv.Key.IsMergeKey() {
			merges = append(merges, c.convert(mv.Value, depth+1))
			continue
		}
		var key *yNode
		if mv.Key == nil {
			key = &yNode{kind: nullNode, typ: tNull, line: line, col: col, size: 1}
		} else {
			key = c.convert(mv.Key, depth+1)
		}
		if key.kind == mapNode || key.kind == seqNode {
			c.errs = append(c.errs, posError{line: key.line, col: key.col, msg: "mapping keys must be scalars"})
			continue
		}
		val := c.convert(mv.Value, depth+1)
		y.keys = append(y.keys, key)
		y.vals = append(y.vals, val)
		y.size = satAdd(y.size, int64(val.size)+1)
	}
	for _, m := range merges {
		var sources []*yNode
		switch m.kind {
		case mapNode:
			sources = []*yNode{m}
		case seqNode:
			sources = m.vals
		}
		if len(sources) == 0 && m.kind != seqNode {
			c.errs = append(c.errs, posError{line: m.line, col: m.col, msg: "merge key << needs a mapping or a list of mappings"})
			continue
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
	return y
}

func (n *yNode) hasKey(k string) bool {
	for _, key := range n.keys {
		if key.text == k {
			return true
		}
	}
	return false
}

package manifest

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// The plain-YAML fast path.
//
// goccy/go-yaml builds a token list and an AST of heap objects for every
// document (several allocations per character of input), which made it
// most of the cost of loading a tree of manifests. Manifests are nearly
// always written in a small, regular part of YAML: block mappings and
// sequences, one-line flow collections, plain and one-line quoted scalars,
// literal block scalars and comments. fastParse reads exactly that part
// straight into the yNode tree, and gives up (ok=false) at the first thing
// outside it: anchors, aliases, tags, merge keys, folded or multi-line
// scalars, empty values, tabs, odd indentation, any syntax error. The caller
// then parses the document with goccy/go-yaml as before, so goccy stays the
// reference for everything unusual and for every syntax error message.
//
// Whenever fastParse accepts a document, the tree it returns is the one the
// goccy path returns (same node kinds, scalar types and values, lines and
// columns, sizes); TestFastPathAgreesWithGoccy and FuzzDecode check this.
// Scalars that could be anything but a string are typed by goccy's own
// token.New and AST constructors, so YAML's scalar rules are goccy's.

// Bounds on what the fast path accepts, well inside the caps that the goccy
// path enforces (MaxDocumentTokens, MaxDepth), so that a document accepted
// here would have passed those caps there too.
const (
	fastMaxTokens = MaxDocumentTokens / 2
	fastMaxDepth  = MaxDepth / 4
)

type fastParser struct {
	src     string
	off     int // start of the current line
	line    int // 1-based line of the current line in the document
	lineOff int // added to every line: the document's offset in its file
	tokens  int // approximate goccy token count
	depth   int
	failed  bool
	// The last column computed (see col): on the line starting at colLine,
	// offset colOff is in column colNum.
	colLine, colOff, colNum int
	*fastArena
}

// fastArena holds the slabs that nodes and child lists are carved from, so
// that the trees of a file's documents take no allocation per node. An
// arena is reused from file to file (arenaPool): a tree lives only while
// its file is decoded (resources keep values and positions, never nodes).
type fastArena struct {
	nodeSlabs    [][]yNode
	ptrSlabs     [][]*yNode
	slab, used   int // the node slab in use and the nodes taken from it
	pslab, pused int
	stack        []*yNode // children of the collections being parsed
}

const (
	nodeSlabSize = 256
	ptrSlabSize  = 1024
	// maxPooledNodes bounds the arena kept for reuse: one that hostile
	// input grew past it is left to the garbage collector.
	maxPooledNodes = 64 * nodeSlabSize
)

var arenaPool = sync.Pool{New: func() any { return &fastArena{} }}

// getArena takes an emptied arena from the pool.
func getArena() *fastArena {
	a := arenaPool.Get().(*fastArena)
	a.slab, a.used, a.pslab, a.pused = 0, 0, 0, 0
	a.stack = a.stack[:0]
	return a
}

// putArena returns an arena whose trees are no longer used.
func putArena(a *fastArena) {
	if len(a.nodeSlabs)*nodeSlabSize <= maxPooledNodes {
		arenaPool.Put(a)
	}
}

// alloc returns a zero node from the arena.
func (a *fastArena) alloc() *yNode {
	if a.slab < len(a.nodeSlabs) && a.used == nodeSlabSize {
		a.slab, a.used = a.slab+1, 0
	}
	if a.slab == len(a.nodeSlabs) {
		a.nodeSlabs = append(a.nodeSlabs, make([]yNode, nodeSlabSize))
	}
	n := &a.nodeSlabs[a.slab][a.used]
	a.used++
	*n = yNode{}
	return n
}

// ptrs returns a slice of k node pointers from the arena.
func (a *fastArena) ptrs(k int) []*yNode {
	for {
		if a.pslab == len(a.ptrSlabs) {
			a.ptrSlabs = append(a.ptrSlabs, make([]*yNode, max(ptrSlabSize, k)))
		}
		if s := a.ptrSlabs[a.pslab]; len(s)-a.pused >= k {
			out := s[a.pused : a.pused+k : a.pused+k]
			a.pused += k
			return out
		}
		a.pslab, a.pused = a.pslab+1, 0
	}
}

// fastParse parses one document chunk (see parseDocument) if it is written
// in the plain subset of YAML described above. ok is false when it is not;
// root is then meaningless.
func fastParse(text string, lineOff int, arena *fastArena) (root *yNode, ok bool) {
	defer func() {
		// A bug here must not crash the loader: goccy gets the document.
		if r := recover(); r != nil {
			root, ok = nil, false
		}
	}()
	return fastParseUnguarded(text, lineOff, arena)
}

// fastParseUnguarded is fastParse without its recover, for the tests that
// must see a panic.
func fastParseUnguarded(text string, lineOff int, arena *fastArena) (root *yNode, ok bool) {
	if strings.IndexByte(text, '\t') >= 0 || strings.IndexByte(text, '\r') >= 0 {
		return nil, false
	}
	// goccy's path refuses a document whose brackets, counted by flowDepth
	// wherever they stand (even inside a plain scalar), nest too deep; so
	// must this one. Few brackets cannot, and are counted fast.
	if strings.Count(text, "[")+strings.Count(text, "{") > MaxDepth {
		if _, _, depth := flowDepth(text); depth > MaxDepth {
			return nil, false
		}
	}
	if arena == nil {
		arena = &fastArena{}
	}
	arena.stack = arena.stack[:0]
	p := &fastParser{src: text, line: 1, lineOff: lineOff, colLine: -1, fastArena: arena}
	if hasMarker(text, "---") {
		// The document start marker; only a comment may follow it.
		end := p.lineEnd()
		if rest := strings.TrimLeft(text[3:end], " "); rest != "" && (rest[0] != '#' || end == 3 || text[3] != ' ') {
			return nil, false
		}
		p.nextLine()
	}
	if !p.skipBlank() {
		if p.failed {
			return nil, false
		}
		return &yNode{kind: nullNode, typ: tNull, size: 1}, true
	}
	if p.indent() != 0 {
		return nil, false
	}
	root = p.blockMap(0, p.off)
	if p.failed || p.off < len(p.src) {
		return nil, false
	}
	return root, true
}

// hasMarker reports whether the line at the start of s is the marker m
// ("---" or "...") as the YAML scanner recognises it.
func hasMarker(s, m string) bool {
	return strings.HasPrefix(s, m) && (len(s) == 3 || s[3] == ' ' || s[3] == '\n')
}

func (p *fastParser) fail() *yNode {
	p.failed = true
	return &yNode{kind: nullNode, typ: tNull, size: 1}
}

// children moves the nodes pushed on the stack since mark into a slice of
// their own, carved from the slab.
func (p *fastParser) children(mark int) []*yNode {
	kids := p.stack[mark:]
	if len(kids) == 0 {
		return nil
	}
	out := p.ptrs(len(kids))
	copy(out, kids)
	clear(kids)
	p.stack = p.stack[:mark]
	return out
}

// mapChildren splits the key, value pairs pushed since mark into a
// mapping's keys and values.
func (p *fastParser) mapChildren(m *yNode, mark int) {
	pairs := p.stack[mark:]
	n := len(pairs) / 2
	all := p.ptrs(2 * n)
	m.keys, m.vals = all[:n:n], all[n:]
	for i := range n {
		m.keys[i], m.vals[i] = pairs[2*i], pairs[2*i+1]
	}
	clear(pairs)
	p.stack = p.stack[:mark]
}

func (p *fastParser) lineEnd() int {
	if i := strings.IndexByte(p.src[p.off:], '\n'); i >= 0 {
		return p.off + i
	}
	return len(p.src)
}

// nextLine moves to the start of the next line.
func (p *fastParser) nextLine() {
	end := p.lineEnd()
	if end < len(p.src) {
		end++
	}
	p.off = end
	p.line++
}

// skipBlank moves past empty, blank and comment-only lines and reports
// whether a line with content follows. A line starting a new document
// marker or "..." makes the document unsupported.
func (p *fastParser) skipBlank() bool {
	for p.off < len(p.src) {
		end := p.lineEnd()
		l := p.src[p.off:end]
		t := strings.TrimLeft(l, " ")
		switch {
		case t == "":
		case t[0] == '#':
			p.tokens++
		default:
			if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "...") {
				p.failed = true
				p.off = len(p.src)
				return false
			}
			return true
		}
		p.nextLine()
	}
	return false
}

// indent is the number of leading spaces of the current line.
func (p *fastParser) indent() int {
	i := p.off
	for i < len(p.src) && p.src[i] == ' ' {
		i++
	}
	return i - p.off
}

// col is the 1-based column of offset i on the current line, counted in
// characters as goccy counts them.
//
// Columns asked for on a line go forward, so the count goes on from the last
// one instead of from the line's start: a long line of many values costs
// its length, not its length times its values.
func (p *fastParser) col(i int) int {
	if p.colLine != p.off || i < p.colOff {
		p.colLine, p.colOff, p.colNum = p.off, p.off, 1
	}
	s := p.src[p.colOff:i]
	n := len(s)
	for j := 0; j < len(s); j++ {
		if s[j] >= utf8.RuneSelf {
			n = utf8.RuneCountInString(s)
			break
		}
	}
	p.colOff, p.colNum = i, p.colNum+n
	return p.colNum
}

func (p *fastParser) node(kind nodeKind, i int) *yNode {
	n := p.alloc()
	n.kind, n.line, n.col, n.size = kind, p.line+p.lineOff, p.col(i), 1
	return n
}

// count adds n to the token estimate and fails past the bound.
func (p *fastParser) count(n int) bool {
	p.tokens += n
	if p.tokens > fastMaxTokens {
		p.failed = true
	}
	return !p.failed
}

func (p *fastParser) enter() bool {
	p.depth++
	if p.depth > fastMaxDepth {
		p.failed = true
	}
	return !p.failed
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'
}

func isKeyStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// keyAt returns the offset of the colon ending a plain key that starts at
// i, when the line holds "key:" followed by a space or the line's end.
func (p *fastParser) keyAt(i, end int) (colon int, ok bool) {
	if i >= end || !isKeyStart(p.src[i]) {
		return 0, false
	}
	j := i + 1
	for j < end && isKeyByte(p.src[j]) {
		j++
	}
	if j >= end || p.src[j] != ':' || (j+1 < end && p.src[j+1] != ' ') {
		return 0, false
	}
	return j, true
}

// blockMap parses a block mapping whose keys start in column indent+1; the
// first key starts at offset first on the current line.
func (p *fastParser) blockMap(indent, first int) *yNode {
	if !p.enter() {
		return p.fail()
	}
	defer func() { p.depth-- }()
	var m *yNode
	mark := len(p.stack)
	defer func() {
		if m != nil && !p.failed {
			p.mapChildren(m, mark)
		}
	}()
	at := first
	for {
		end := p.lineEnd()
		colon, ok := p.keyAt(at, end)
		if !ok || !p.count(3) {
			return p.fail()
		}
		if m == nil {
			m = p.node(mapNode, colon)
		}
		key := p.plain(p.src[at:colon], at)
		val := p.mapValue(indent, colon+1, end)
		if p.failed {
			return val
		}
		p.stack = append(p.stack, key, val)
		m.size = satAdd(m.size, int64(val.size)+1)
		if !p.skipBlank() {
			return m
		}
		switch ind := p.indent(); {
		case ind < indent:
			return m
		case ind > indent:
			return p.fail()
		}
		at = p.off + indent
	}
}

// mapValue parses the value after a key's colon (at offset i on the current
// line) of a block mapping at indent, and leaves the parser on the line
// after the value.
func (p *fastParser) mapValue(indent, i, end int) *yNode {
	for i < end && p.src[i] == ' ' {
		i++
	}
	if i < end && p.src[i] != '#' {
		return p.inline(indent, i, end)
	}
	// The value is on the following lines: a nested block collection.
	if i < end {
		p.tokens++ // the comment
	}
	p.nextLine()
	if !p.skipBlank() {
		return p.fail() // an empty value: goccy's null has its own rules
	}
	ind := p.indent()
	start := p.off + ind
	isSeq := p.src[start] == '-' && (start+1 == len(p.src) || p.src[start+1] == ' ' || p.src[start+1] == '\n')
	switch {
	case ind > indent && isSeq:
		return p.blockSeq(ind, -1)
	case ind > indent:
		return p.blockMap(ind, start)
	case ind == indent && isSeq:
		return p.blockSeq(ind, indent)
	}
	return p.fail()
}

// blockSeq parses a block sequence whose dashes are in column indent+1.
// mapIndent is the indent of the mapping holding it when the sequence sits
// at that mapping's own indentation (key:\n- a), else -1.
func (p *fastParser) blockSeq(indent, mapIndent int) *yNode {
	if !p.enter() {
		return p.fail()
	}
	defer func() { p.depth-- }()
	var s *yNode
	mark := len(p.stack)
	defer func() {
		if s != nil && !p.failed {
			s.vals = p.children(mark)
		}
	}()
	for {
		dash := p.off + indent
		end := p.lineEnd()
		if s == nil {
			s = p.node(seqNode, dash)
		}
		i := dash + 1
		for i < end && p.src[i] == ' ' {
			i++
		}
		if i == dash+1 || i >= end || p.src[i] == '#' || p.src[i] == '-' || !p.count(1) {
			return p.fail() // "-" alone, "- - x", "- # comment": rare, left to goccy
		}
		var item *yNode
		if _, isKey := p.keyAt(i, end); isKey {
			item = p.blockMap(i-p.off, i)
		} else {
			item = p.inline(indent, i, end)
		}
		if p.failed {
			return item
		}
		p.stack = append(p.stack, item)
		s.size = satAdd(s.size, int64(item.size))
		if !p.skipBlank() {
			return s
		}
		ind := p.indent()
		start := p.off + ind
		switch {
		case ind < indent:
			return s
		case ind > indent:
			return p.fail()
		case p.src[start] == '-' && (start+1 == len(p.src) || p.src[start+1] == ' ' || p.src[start+1] == '\n'):
			continue
		case indent == mapIndent:
			return s
		}
		return p.fail()
	}
}

// inline parses a value that starts at offset i on the current line, inside
// a block collection at indent, and moves to the next line.
func (p *fastParser) inline(indent, i, end int) *yNode {
	var n *yNode
	j := i
	switch c := p.src[i]; c {
	case '{', '[':
		n, j = p.flow(i, end)
	case '"', '\'':
		if !p.count(1) {
			return p.fail()
		}
		var text string
		text, j = p.quoted(i, end)
		n = p.node(scalarNode, i)
		n.typ, n.text = tString, text
	case '|':
		return p.literal(indent, i, end)
	case '>', '&', '*', '!', '?', '%', '@', '`', ',', ']', '}', '#', ':', '-':
		if c == '-' && i+1 < end && p.src[i+1] != ' ' {
			return p.plainValue(i, end)
		}
		return p.fail()
	default:
		return p.plainValue(i, end)
	}
	if p.failed {
		return p.fail()
	}
	// Only spaces and a comment may follow a flow collection or a quoted
	// scalar on its line.
	k := j
	for k < end && p.src[k] == ' ' {
		k++
	}
	if k < end && (p.src[k] != '#' || k == j) {
		return p.fail()
	}
	if k < end {
		p.tokens++
	}
	p.nextLine()
	return n
}

// plainValue parses a plain scalar that fills the rest of the line (up to a
// comment) and moves to the next line.
func (p *fastParser) plainValue(i, end int) *yNode {
	if !p.count(1) {
		return p.fail()
	}
	j := i
	for ; j < end; j++ {
		c := p.src[j]
		if c == ':' && (j+1 == end || p.src[j+1] == ' ') {
			return p.fail() // "a: b: c" is an error; let goccy word it
		}
		if c == '#' && p.src[j-1] == ' ' {
			p.tokens++
			break
		}
	}
	text := strings.TrimRight(p.src[i:j], " ")
	if j == end && len(text) < j-i {
		// goccy shifts the column of a plain scalar by the spaces that
		// trail it at the end of its line; leave those lines to goccy.
		return p.fail()
	}
	n := p.plain(text, i)
	p.nextLine()
	return n
}

// quoted reads a one-line quoted scalar starting at i and returns its value
// and the offset after the closing quote.
func (p *fastParser) quoted(i, end int) (string, int) {
	q := p.src[i]
	j := i + 1
	var b []byte
	start := j
	for j < end {
		c := p.src[j]
		switch {
		case c == q && q == '\'' && j+1 < end && p.src[j+1] == '\'':
			b = append(b, p.src[start:j+1]...)
			j += 2
			start = j
			continue
		case c == q:
			if b == nil {
				return p.src[start:j], j + 1
			}
			return string(append(b, p.src[start:j]...)), j + 1
		case c == '\\' && q == '"':
			if j+1 >= end {
				p.failed = true
				return "", end
			}
			r, ok := simpleEscape(p.src[j+1])
			if !ok {
				p.failed = true
				return "", end
			}
			b = append(b, p.src[start:j]...)
			b = append(b, r)
			j += 2
			start = j
			continue
		}
		j++
	}
	p.failed = true // not closed on this line
	return "", end
}

// simpleEscape maps the one-character escapes of double-quoted scalars that
// stand for an ASCII byte, as goccy reads them; the others go to goccy.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '0':
		return 0, true
	case 'a':
		return 7, true
	case 'b':
		return 8, true
	case 't':
		return '\t', true
	case 'n':
		return '\n', true
	case 'v':
		return 0x0b, true
	case 'f':
		return 0x0c, true
	case 'r':
		return '\r', true
	case 'e':
		return 0x1b, true
	case ' ', '"', '/', '\\':
		return c, true
	}
	return 0, false
}

// literal parses a literal block scalar ("|" or "|-") whose header is at
// offset i, inside a block collection at indent.
func (p *fastParser) literal(indent, i, end int) *yNode {
	strip := false
	h := p.src[i+1 : end]
	if strings.HasPrefix(h, "-") {
		strip, h = true, h[1:]
	}
	if strings.TrimLeft(h, " ") != "" || !p.count(2) {
		return p.fail() // keep indicator, explicit indentation, header comment
	}
	n := p.node(scalarNode, i)
	n.typ = tString
	p.nextLine()
	var b strings.Builder
	blockIndent := -1
	pendingBlank := 0
	for p.off < len(p.src) {
		end := p.lineEnd()
		l := p.src[p.off:end]
		if l == "" {
			pendingBlank++
			p.nextLine()
			continue
		}
		ind := p.indent()
		if ind == len(l) {
			return p.fail() // a line of spaces only: goccy has its own rules
		}
		if blockIndent < 0 {
			if ind <= indent {
				break
			}
			blockIndent = ind
		}
		if ind < blockIndent {
			break
		}
		if end == len(p.src) {
			return p.fail() // last line without a line break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for range pendingBlank {
			b.WriteByte('\n')
		}
		pendingBlank = 0
		b.WriteString(l[blockIndent:])
		p.nextLine()
	}
	if blockIndent < 0 {
		return p.fail() // an empty literal
	}
	n.text = b.String()
	if !strip {
		n.text += "\n"
	}
	return n
}

// flow parses a one-line flow collection starting at i and returns it and
// the offset after its closing bracket.
func (p *fastParser) flow(i, end int) (*yNode, int) {
	if !p.enter() || !p.count(2) {
		return p.fail(), end
	}
	defer func() { p.depth-- }()
	isMap := p.src[i] == '{'
	closer := byte(']')
	n := p.node(seqNode, i)
	if isMap {
		closer = '}'
		n.kind = mapNode
	}
	j := p.skipSpaces(i+1, end)
	if j < end && p.src[j] == closer {
		return n, j + 1
	}
	mark := len(p.stack)
	defer func() {
		if p.failed {
			return
		}
		if isMap {
			p.mapChildren(n, mark)
		} else {
			n.vals = p.children(mark)
		}
	}()
	for {
		if isMap {
			keyEnd := j
			for keyEnd < end && isKeyByte(p.src[keyEnd]) {
				keyEnd++
			}
			if j >= end || !isKeyStart(p.src[j]) || keyEnd+1 >= end || p.src[keyEnd] != ':' || p.src[keyEnd+1] != ' ' || !p.count(2) {
				return p.fail(), end
			}
			key := p.plain(p.src[j:keyEnd], j)
			j = p.skipSpaces(keyEnd+1, end)
			var val *yNode
			val, j = p.flowValue(j, end)
			if p.failed {
				return val, end
			}
			p.stack = append(p.stack, key, val)
			n.size = satAdd(n.size, int64(val.size)+1)
		} else {
			var item *yNode
			item, j = p.flowValue(j, end)
			if p.failed {
				return item, end
			}
			p.stack = append(p.stack, item)
			n.size = satAdd(n.size, int64(item.size))
		}
		j = p.skipSpaces(j, end)
		if j >= end {
			return p.fail(), end
		}
		switch p.src[j] {
		case closer:
			return n, j + 1
		case ',':
			p.tokens++
			j = p.skipSpaces(j+1, end)
			if j >= end || p.src[j] == closer || p.src[j] == ',' {
				return p.fail(), end // a trailing or doubled comma
			}
		default:
			return p.fail(), end
		}
	}
}

func (p *fastParser) skipSpaces(j, end int) int {
	for j < end && p.src[j] == ' ' {
		j++
	}
	return j
}

// flowValue parses one value inside a flow collection.
func (p *fastParser) flowValue(j, end int) (*yNode, int) {
	if j >= end {
		return p.fail(), end
	}
	switch c := p.src[j]; c {
	case '{', '[':
		return p.flow(j, end)
	case '"', '\'':
		if !p.count(1) {
			return p.fail(), end
		}
		text, k := p.quoted(j, end)
		n := p.node(scalarNode, j)
		n.typ, n.text = tString, text
		return n, k
	case '>', '|', '&', '*', '!', '?', '%', '@', '`', ',', ']', '}', '#', ':':
		return p.fail(), end
	case '-':
		if j+1 >= end || p.src[j+1] == ' ' {
			return p.fail(), end
		}
	}
	if !p.count(1) {
		return p.fail(), end
	}
	k := j
scan:
	for ; k < end; k++ {
		switch p.src[k] {
		case ',', '[', ']', '{', '}':
			break scan
		case ':':
			if k+1 >= end || p.src[k+1] != '/' {
				return p.fail(), end // a key or an odd colon: left to goccy
			}
		case '#':
			if p.src[k-1] == ' ' {
				return p.fail(), end // a comment inside a flow collection
			}
		}
	}
	text := strings.TrimRight(p.src[j:k], " ")
	return p.plain(text, j), k
}

// plain types a plain scalar at offset i of the current line. Text that
// starts with a letter is a string unless it is one of YAML's null or
// boolean words; anything else is typed by goccy's own scanner and parser
// rules (token.New and the ast constructors) and converted as the goccy
// path converts it.
func (p *fastParser) plain(text string, i int) *yNode {
	col := p.col(i)
	c := text[0]
	typ := tNone
	switch {
	case text == "true" || text == "false":
		typ = tBool
	case ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && !isReservedWord(text),
		'0' <= c && c <= '9' && !maybeNumber(text):
		typ = tString
	case isSmallDecimal(text):
		typ = tInt
	}
	if typ != tNone {
		n := p.alloc()
		n.kind, n.typ, n.line, n.col, n.size, n.text = scalarNode, typ, p.line+p.lineOff, col, 1, text
		switch typ {
		case tBool:
			n.bval = text == "true"
		case tInt:
			for k := 0; k < len(text); k++ {
				n.ival = n.ival*10 + int64(text[k]-'0')
			}
		}
		return n
	}
	tk := token.New(text, text, &token.Position{Line: p.line, Column: col})
	var node ast.Node
	switch tk.Type {
	case token.NullType:
		node = ast.Null(tk)
	case token.BoolType:
		node = ast.Bool(tk)
	case token.IntegerType, token.BinaryIntegerType, token.OctetIntegerType, token.HexIntegerType:
		node = ast.Integer(tk)
	case token.FloatType:
		node = ast.Float(tk)
	case token.InfinityType:
		node = ast.Infinity(tk)
	case token.NanType:
		node = ast.Nan(tk)
	default:
		node = ast.String(tk)
	}
	c2 := &converter{lineOff: p.lineOff}
	return c2.convert(node, 0)
}

// isReservedWord reports the words goccy reads as null or a boolean.
func isReservedWord(s string) bool {
	switch s {
	case "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE":
		return true
	}
	return false
}

// maybeNumber reports whether text, which starts with a digit, could be read
// as a number by goccy (token.ToNumber: strconv's integer and float syntax
// with YAML's 0x, 0o, 0b prefixes and underscores); text with any other byte,
// such as 20G or 10.0.0.1/24, is a string.
func maybeNumber(text string) bool {
	for k := 0; k < len(text); k++ {
		switch c := text[k]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F',
			c == 'x', c == 'X', c == 'o', c == 'O', c == 'p', c == 'P', c == '.', c == '_', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}

// isSmallDecimal reports a decimal integer without sign or leading zero
// that fits an int64 comfortably.
func isSmallDecimal(s string) bool {
	if len(s) == 0 || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for k := 0; k < len(s); k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return true
}

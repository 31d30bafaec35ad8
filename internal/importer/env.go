package importer

import (
	"fmt"
	"strings"
)

// EnvVar is one assignment of an env file, in file order.
type EnvVar struct {
	Key   string
	Value string
	Line  int
}

// EnvProblem is a line of an env file the parser could not take as a plain
// assignment; it is reported, never dropped silently.
type EnvProblem struct {
	Line   int
	Text   string
	Reason string
}

// ParseEnv reads a container.env as the shell that Proxmox-GitOps sources it
// with would: blank lines and # comments, an optional `export` prefix,
// KEY=value with the value unquoted, "double quoted" (backslash escapes
// \" \\ \$ \` and newline) or 'single quoted' (literal), and a # comment after
// the value. $NAME and ${NAME} in unquoted and double-quoted values expand
// from keys assigned earlier (prior holds keys of files sourced before);
// an unknown name expands to nothing, as in the shell, and is reported.
// Anything else (commands, several assignments on a line, an unclosed quote)
// is reported and skipped.
func ParseEnv(text string, prior map[string]string) ([]EnvVar, []EnvProblem) {
	var vars []EnvVar
	var probs []EnvProblem
	known := map[string]string{}
	for k, v := range prior {
		known[k] = v
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		eq := strings.IndexByte(line, '=')
		if eq <= 0 || !isEnvName(line[:eq]) {
			probs = append(probs, EnvProblem{Line: n, Text: lines[i], Reason: "not a KEY=value assignment"})
			continue
		}
		key, raw, first := line[:eq], line[eq+1:], lines[i]
		// A double- or single-quoted value may span lines.
		for unclosedQuote(raw) && i+1 < len(lines) {
			i++
			raw += "\n" + lines[i]
		}
		val, rest, undefined, err := envValue(raw, known)
		if err != "" {
			probs = append(probs, EnvProblem{Line: n, Text: first, Reason: err})
			continue
		}
		for _, u := range undefined {
			probs = append(probs, EnvProblem{Line: n, Text: first, Reason: fmt.Sprintf("$%s is not set before this line: it expands to nothing", u)})
		}
		if rest = strings.TrimSpace(rest); rest != "" && !strings.HasPrefix(rest, "#") {
			probs = append(probs, EnvProblem{Line: n, Text: first, Reason: fmt.Sprintf("text after the value of %s (%q) is not read", key, rest)})
		}
		known[key] = val
		vars = append(vars, EnvVar{Key: key, Value: val, Line: n})
	}
	return vars, probs
}

func isEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// unclosedQuote tells whether a value's quotes are still open at its end.
func unclosedQuote(raw string) bool {
	var q byte
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case q == 0 && (c == ' ' || c == '\t'):
			return false // the value ended; the rest is a comment or an error
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == c:
			q = 0
		case q == '"' && c == '\\':
			i++
		case q == 0 && c == '\\':
			i++
		}
	}
	return q != 0
}

// envValue reads one shell word (the value) from raw and returns it with
// what follows it, the names it expanded that were not set, or an error.
func envValue(raw string, known map[string]string) (val, rest string, undefined []string, errText string) {
	var b strings.Builder
	bad := ""
	expand := func(s string, i int) int {
		name, next := dollarName(s, i)
		if name == "" && strings.HasPrefix(s[i:], "${") {
			bad = "parameter expansion ${...} other than ${NAME} is not evaluated"
			return len(s)
		}
		if name == "" {
			b.WriteByte('$')
			return i + 1
		}
		v, ok := known[name]
		if !ok {
			undefined = append(undefined, name)
		}
		b.WriteString(v)
		return next
	}
	i := 0
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == ' ' || c == '\t':
			return b.String(), raw[i:], undefined, ""
		case c == '\'':
			end := strings.IndexByte(raw[i+1:], '\'')
			if end < 0 {
				return "", "", nil, "unclosed single quote"
			}
			b.WriteString(raw[i+1 : i+1+end])
			i += end + 2
		case c == '"':
			i++
			for {
				if i >= len(raw) {
					return "", "", nil, "unclosed double quote"
				}
				d := raw[i]
				if d == '"' {
					i++
					break
				}
				switch {
				case d == '\\' && i+1 < len(raw) && strings.IndexByte("\"\\$`\n", raw[i+1]) >= 0:
					if raw[i+1] != '\n' {
						b.WriteByte(raw[i+1])
					}
					i += 2
				case d == '$':
					if i = expand(raw, i); bad != "" {
						return "", "", nil, bad
					}
				case d == '`':
					return "", "", nil, "command substitution (`...`) is not evaluated"
				default:
					b.WriteByte(d)
					i++
				}
			}
		case c == '\\' && i+1 < len(raw):
			b.WriteByte(raw[i+1])
			i += 2
		case c == '$':
			if strings.HasPrefix(raw[i:], "$(") {
				return "", "", nil, "command substitution ($(...)) is not evaluated"
			}
			if i = expand(raw, i); bad != "" {
				return "", "", nil, bad
			}
		case c == '`':
			return "", "", nil, "command substitution (`...`) is not evaluated"
		case c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')':
			return "", "", nil, fmt.Sprintf("shell syntax %q is not evaluated", string(c))
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), "", undefined, ""
}

// dollarName reads $NAME or ${NAME} at s[i] and returns the name and the
// index after it; "" when s[i:] is not a variable reference.
func dollarName(s string, i int) (string, int) {
	if i+1 < len(s) && s[i+1] == '{' {
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 || !isEnvName(s[i+2:i+2+end]) {
			return "", i + 1
		}
		return s[i+2 : i+2+end], i + 3 + end
	}
	j := i + 1
	for j < len(s) && isEnvName(s[i+1:j+1]) {
		j++
	}
	if j == i+1 {
		return "", i + 1
	}
	return s[i+1 : j], j
}

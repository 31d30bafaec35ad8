package config

import (
	"fmt"
	"strings"
)

// expandEnv replaces ${VAR} and ${VAR:-default} with values from lookup.
// "$${" writes a literal "${". A $ not followed by { is kept as is, so
// secrets containing $ survive. An unset variable without default is an
// error, so a missing secret is caught at start-up rather than as an
// authentication failure later.
func expandEnv(s string, lookup func(string) (string, bool)) (string, bool, error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	expanded := false
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", false, fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", false, fmt.Errorf("invalid environment variable name %q in ${%s}", name, expr)
		}
		val, ok := lookup(name)
		switch {
		case ok && (val != "" || !hasDef):
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		default:
			return "", false, fmt.Errorf("environment variable %s is not set (referenced as ${%s})", name, expr)
		}
		expanded = true
		i += end + 1
	}
	return b.String(), expanded, nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

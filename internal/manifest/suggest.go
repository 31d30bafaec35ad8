package manifest

import "fmt"

// suggest returns the candidate closest to word by edit distance when it is
// close enough to be a plausible typo, or "". Case is ignored.
func suggest(word string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(word, c)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	// Allow roughly one edit per three characters, at least one and at most three.
	limit := min(max(len(word)/3, 1), 3)
	if bestDist <= limit {
		return best
	}
	return ""
}

// didYouMean formats a suggestion suffix: ", did you mean `x`?" or "".
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return fmt.Sprintf(", did you mean `%s`?", s)
	}
	return ""
}

// lower returns s with ASCII letters in lower case (s itself when it has no
// upper-case letter).
func lower(s string) string {
	i := 0
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// maxEditLen bounds the words editDistance compares letter by letter.
const maxEditLen = 64

// editDistance is the Damerau-Levenshtein distance (optimal string alignment)
// over bytes, ignoring ASCII case; field names and enum values are ASCII. It
// is computed in three rows on the stack: every misspelt field or value is
// compared with every candidate, which must stay cheap for a file of errors.
func editDistance(a, b string) int {
	if len(a) > maxEditLen || len(b) > maxEditLen {
		// Long inputs are never typos of short names; avoid quadratic work.
		return max(len(a), len(b))
	}
	var rows [3][maxEditLen + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		ai := lowerByte(a[i-1])
		for j := 1; j <= len(b); j++ {
			bj := lowerByte(b[j-1])
			cost := 1
			if ai == bj {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ai == lowerByte(b[j-2]) && lowerByte(a[i-2]) == bj {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

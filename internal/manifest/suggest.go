package manifest

import "fmt"

// suggest returns the candidate closest to word by edit distance when it is
// close enough to be a plausible typo, or "".
func suggest(word string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(lower(word), lower(c))
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

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// editDistance is the Damerau-Levenshtein distance (optimal string alignment)
// over bytes; field names and enum values are ASCII.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Long inputs are never typos of short names; avoid quadratic work.
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

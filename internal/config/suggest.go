package config

import "strings"

// suggest returns the candidate closest to word when it is close enough to
// be a likely typo ("endpont" -> "endpoint", "tokenid" -> "tokenId"), or "".
func suggest(word string, candidates []string) string {
	best, bestDist := "", -1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := EditDistance(lw, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 2
	if len(word) >= 9 {
		limit = 3
	}
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, counted in
// runes: the closeness of a misspelt key or name to one that exists.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// didYouMean formats a suggestion suffix, or "" when there is none.
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return ", did you mean `" + s + "`?"
	}
	return ""
}

// Package suggest finds the known name closest to a misspelled one, for the "did you mean"
// of unknown commands, flags and configuration keys.
package suggest

import "fmt"

// Closest returns the candidate nearest to word by edit distance, or "" when none is near
// enough to be a likely misspelling: at most 2 edits, or a quarter of word's length for
// longer words. Ties go to the first candidate.
func Closest(word string, candidates []string) string {
	best, bestDist := "", max(2, len(word)/4)+1
	for _, c := range candidates {
		if d := Distance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean is `; did you mean "X"?` with the candidate X closest to word, or "" when none
// is near: the end of an error message about an unknown name.
func DidYouMean(word string, candidates []string) string {
	if best := Closest(word, candidates); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// Distance is the Levenshtein edit distance between a and b, in bytes.
func Distance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

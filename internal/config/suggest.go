package config

// suggest returns the known key closest to an unknown one by edit distance,
// or "" when nothing is close enough to be a plausible typo: suggesting an
// unrelated key would only mislead.
func (c *Config) suggest(key string) string {
	best, bestD := "", -1
	consider := func(cand, canonical string) {
		d := editDistance(key, cand)
		if bestD < 0 || d < bestD || (d == bestD && canonical < best) {
			best, bestD = canonical, d
		}
	}
	for k := range c.opts {
		consider(k, k)
	}
	for fk, k := range c.fallback {
		consider(fk, k)
	}
	// A typo changes a few characters; a forgotten prefix such as
	// "execution." drops up to about a third of the key.
	if bestD < 0 || bestD > max(3, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b in bytes (keys
// are ASCII).
func editDistance(a, b string) int {
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

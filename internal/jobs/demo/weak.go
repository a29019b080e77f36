package demo

import (
	"strconv"
	"strings"
)

// MissingDuplicated measures a WEAKLY_CONSISTENT run's committed lines
// against the events 0 … n-1 by index, the field every line starts with
// ("i,account,count,total"): missing counts the indices without a line,
// dup the lines beyond one per index.
//
// It compares indices, not whole lines: in weak mode a record lost or
// duplicated before the aggregation also changes the counts and totals of
// its account's later lines, which are nevertheless there once each, so a
// comparison with Expected would count every one of them. A line whose
// index is not in [0, n) (or does not parse) belongs to no event and
// counts as duplicated, an extra line.
func MissingDuplicated(n int64, lines []string) (missing, dup int64) {
	seen := make([]uint64, (n+63)/64)
	var distinct int64
	for _, l := range lines {
		i, ok := lineIndex(l)
		if !ok || i < 0 || i >= n {
			dup++
			continue
		}
		w, bit := i/64, uint64(1)<<(i%64)
		if seen[w]&bit != 0 {
			dup++
			continue
		}
		seen[w] |= bit
		distinct++
	}
	return n - distinct, dup
}

// lineIndex parses the event index a demo line starts with.
func lineIndex(l string) (int64, bool) {
	if j := strings.IndexByte(l, ','); j >= 0 {
		l = l[:j]
	}
	i, err := strconv.ParseInt(l, 10, 64)
	return i, err == nil
}

package demo

import (
	"fmt"
	"sort"
)

// Expected returns the lines a failure-free run over n events and k
// accounts commits, computed directly.
func Expected(n, k int64) []string {
	count := make(map[int64]int64, k)
	total := make(map[int64]int64, k)
	out := make([]string, 0, n)
	var buf []byte
	for i := int64(0); i < n; i++ {
		a := Account(i, k)
		count[a]++
		total[a] += Amount(i)
		buf = Result{I: i, Account: a, Count: count[a], Total: total[a]}.AppendLine(buf[:0])
		out = append(out, string(buf))
	}
	return out
}

// Diff compares two multisets of lines and describes the first differences:
// lines missing from got, lines got has in excess (duplicates included).
// It returns "" when they are equal.
func Diff(want, got []string) string {
	counts := make(map[string]int, len(want))
	for _, l := range want {
		counts[l]++
	}
	for _, l := range got {
		counts[l]--
	}
	var missing, extra []string
	for l, c := range counts {
		for ; c > 0; c-- {
			missing = append(missing, l)
		}
		for ; c < 0; c++ {
			extra = append(extra, l)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("want %d lines, got %d: %d missing (first %v), %d extra or duplicated (first %v)",
		len(want), len(got), len(missing), head(missing), len(extra), head(extra))
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// Excess describes the lines of got that want does not hold, counting
// multiplicity (a duplicate of a wanted line is excess): "" when got is a
// sub-multiset of want. A run that failed may have committed only part of
// its output, but never a line twice or one a failure-free run would not.
func Excess(want, got []string) string {
	counts := make(map[string]int, len(want))
	for _, l := range want {
		counts[l]++
	}
	var extra []string
	for _, l := range got {
		if counts[l] == 0 {
			extra = append(extra, l)
			continue
		}
		counts[l]--
	}
	if len(extra) == 0 {
		return ""
	}
	sort.Strings(extra)
	return fmt.Sprintf("%d of %d lines are not in the failure-free output or are duplicated (first %v)", len(extra), len(got), head(extra))
}

package nexmark

import (
	"fmt"
	"slices"
	"strings"
)

// Verify checks committed, the lines a run of q over events 0 … n-1
// committed, against q's reference computation: equal multisets of rows,
// after applying the changelog for an updating query. A query with its
// own Verify (processing-time q12) is checked by that.
func Verify(q *Query, p Params, n int64, committed []string) error {
	if q.Verify != nil {
		return q.Verify(p, n, committed)
	}
	ref := &RefOut{Collect: true}
	if err := q.Reference(p, n, ref); err != nil {
		return fmt.Errorf("%s reference: %w", q.Name, err)
	}
	want, got := ref.Lines, committed
	if q.Changelog {
		var err error
		if got, err = ApplyChangelog(committed); err != nil {
			return fmt.Errorf("%s committed changelog: %w", q.Name, err)
		}
		if want, err = ApplyChangelog(ref.Lines); err != nil {
			return fmt.Errorf("%s reference changelog: %w", q.Name, err)
		}
	} else {
		got = slices.Clone(got)
		want = slices.Clone(want)
		slices.Sort(got)
		slices.Sort(want)
	}
	return diff(q.Name, want, got)
}

// diff compares two sorted multisets and names a few differences.
func diff(name string, want, got []string) error {
	var missing, extra []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i] < got[j]:
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return nil
	}
	show := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], " | ") + fmt.Sprintf(" | … (%d more)", len(s)-5)
		}
		return strings.Join(s, " | ")
	}
	return fmt.Errorf("%s: %d rows committed, %d expected; %d missing [%s]; %d unexpected [%s]",
		name, len(got), len(want), len(missing), show(missing), len(extra), show(extra))
}

package ordercheck

import (
	"reflect"
	"testing"
)

// seqs builds entries of source src with the given seqs, all by attempt a.
func seqs(src, a int64, ss ...int64) []Entry {
	out := make([]Entry, len(ss))
	for i, s := range ss {
		out[i] = Entry{Src: src, Seq: s, Attempt: a}
	}
	return out
}

func TestAnalyse(t *testing.T) {
	cat := func(parts ...[]Entry) []Entry {
		var out []Entry
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		committed []Entry
		want      Report
	}{{
		name: "exact, keys interleaved",
		// Two lanes: keys (0,0) and (0,1) interleave freely; each steps by 2.
		committed: cat(seqs(0, 0, 1, 0, 3, 2, 4, 5), seqs(1, 0, 0, 1, 2, 3, 4, 5)),
		want:      Report{Sources: []SourceReport{{Committed: 6}, {Committed: 6}}},
	}, {
		name: "replay at an attempt boundary",
		// Attempt 1 replays 2 and 3 after attempt 0 committed 0..3.
		committed: cat(seqs(0, 0, 0, 1, 2, 3), seqs(0, 1, 2, 3, 4, 5)),
		want: Report{Sources: []SourceReport{
			{Committed: 8, OutOfOrder: 2, Duplicates: 2},
			{Missing: 6},
		}},
	}, {
		name:      "reorder inside an attempt, a gap and a foreign record",
		committed: cat(seqs(0, 0, 0, 1, 4, 3, 2), seqs(0, 0, 9), seqs(7, 0, 0)),
		want: Report{Sources: []SourceReport{
			// Lane 0: 0 then 4 (gap, want 2) then 2 (regression, want 6);
			// lane 1: 1 then 3: fine.
			{Committed: 5, OutOfOrder: 2, Gaps: 1, InAttemptDisorder: 2, Missing: 1},
			{Missing: 6},
		}, Foreign: 2},
	}, {
		name: "flagged and a first record that is not its lane's first",
		committed: []Entry{
			{Src: 1, Seq: 2, Flag: FlagGap},
			{Src: 1, Seq: 1, Flag: FlagRegression},
		},
		want: Report{Sources: []SourceReport{
			{Missing: 6},
			{Committed: 2, OutOfOrder: 1, Gaps: 1, Flagged: 2, Missing: 4},
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Analyse(tc.committed, 2, 6, 2)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Analyse:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

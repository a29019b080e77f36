package demo_test

import (
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// MissingDuplicated counts by index: a line lost, a line twice (even
// with another count and total, as after a duplicated input record), and
// lines that belong to no event.
func TestMissingDuplicated(t *testing.T) {
	const n, k = 200, 7
	want := demo.Expected(n, k)
	for _, c := range []struct {
		name         string
		lines        []string
		missing, dup int64
	}{
		{"exact", want, 0, 0},
		{"exact, shuffled", scrambled(want), 0, 0},
		{"none", nil, n, 0},
		{"one missing", slices.Delete(slices.Clone(want), 17, 18), 1, 0},
		{"first and last missing", want[1 : n-1], 2, 0},
		{"one twice", append(slices.Clone(want), want[40]), 0, 1},
		{"one three times", append(slices.Clone(want), want[40], want[40]), 0, 2},
		// A duplicated input record: the aggregator emits index 40 again
		// with its account's count one higher.
		{"same index, other count", append(slices.Clone(want), "40,5,99,12345"), 0, 1},
		{"missing and duplicated", append(slices.Delete(slices.Clone(want), 3, 8), want[9], want[199]), 5, 2},
		{"index out of range", append(slices.Clone(want), "200,1,1,1", "-1,1,1,1"), 0, 2},
		{"no index", append(slices.Clone(want), "", "x,1,1,1"), 0, 2},
		{"index only", append(slices.Clone(want), "12"), 0, 1}, // a second line of index 12
	} {
		missing, dup := demo.MissingDuplicated(n, c.lines)
		if missing != c.missing || dup != c.dup {
			t.Errorf("%s: MissingDuplicated = %d missing, %d duplicated; want %d, %d", c.name, missing, dup, c.missing, c.dup)
		}
	}
	if m, d := demo.MissingDuplicated(0, []string{"0,1,1,1"}); m != 0 || d != 1 {
		t.Errorf("n=0: %d missing, %d duplicated; want 0, 1", m, d)
	}
}

// scrambled returns s in a fixed scrambled order: committed part files
// come in no particular order.
func scrambled(s []string) []string {
	out := slices.Clone(s)
	for i := range out {
		j := (i * 7919) % len(out)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

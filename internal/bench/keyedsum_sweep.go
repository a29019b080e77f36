package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// keyList is --keys: one key count, or a comma-separated list of them for
// a sweep. A single value parses as the int64 flag it used to be (base
// prefixes and underscores included), so `--keys N` runs as before.
type keyList []int64

func (l *keyList) String() string {
	s := make([]string, len(*l))
	for i, k := range *l {
		s[i] = strconv.FormatInt(k, 10)
	}
	return strings.Join(s, ",")
}

func (l *keyList) Set(v string) error {
	var out keyList
	for _, f := range strings.Split(v, ",") {
		k, err := strconv.ParseInt(strings.TrimSpace(f), 0, 64)
		if err != nil {
			return fmt.Errorf("key count %q is not an integer; want e.g. 1000 or 1000,1000000", f)
		}
		if k < 1 {
			return fmt.Errorf("key count %d must be at least 1", k)
		}
		out = append(out, k)
	}
	*l = out
	return nil
}

func (l *keyList) Type() string { return "int64s" }

// printKeyedSumSweep prints every key count of a sweep in one table, in
// the shape of BENCHMARKS.md's, after each key count's own lines.
func printKeyedSumSweep(all []benchResult) {
	fmt.Println()
	fmt.Println("| keys | engine records/s | loop records/s | ratio | engine B/key (RSS) | loop B/key (RSS) | engine B/key (live heap) | loop B/key (live heap) |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range all {
		thr := []string{"–", "–", "–"}
		if r.Runs > 0 {
			thr = []string{mega(r.RecordsPerSec), mega(r.BaselineRecordsPerSec), fmt.Sprintf("%.2f", r.Ratio)}
		}
		mem := []string{"–", "–", "–", "–"}
		if m := r.keyedSumMemory; m != nil {
			mem = []string{fmt.Sprintf("%.0f", m.EngineBytesPerKey), fmt.Sprintf("%.0f", m.BaselineBytesPerKey),
				fmt.Sprintf("%.0f", m.EngineLiveHeapBytesPerKey), fmt.Sprintf("%.0f", m.BaselineLiveHeapBytesPerKey)}
		}
		fmt.Printf("| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Keys, thr[0], thr[1], thr[2], mem[0], mem[1], mem[2], mem[3])
	}
}

// mega renders a rate in millions.
func mega(v float64) string { return fmt.Sprintf("%.1f M", v/1e6) }

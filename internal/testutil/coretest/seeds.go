package coretest

import (
	"flag"
	"testing"
)

// seedFlag is -seed: one seed instead of each test's range, to rerun the
// one a failure named.
var seedFlag = flag.Uint64("seed", 0, "run each seeded random test of the package with this seed only, logging its steps where the test can (0: each test's own range of seeds)")

// Seeds is the range of seeds a seeded random test runs: First,
// First+1, …, N of them, or Short of them under -short (0 keeps N).
type Seeds struct {
	First    uint64
	N, Short int
}

// Run calls run with each seed of s in turn, or only with the one -seed
// names, and returns how many seeds it ran. It stops after the first seed
// whose run failed t, so that a failure reports that seed (and whatever
// history its run printed), not one failure for every seed after it.
func (s Seeds) Run(t testing.TB, run func(seed uint64)) int {
	t.Helper()
	if Single() {
		run(*seedFlag)
		return 1
	}
	n := s.N
	if testing.Short() && s.Short > 0 {
		n = s.Short
	}
	for i := range n {
		run(s.First + uint64(i))
		if t.Failed() {
			return i + 1
		}
	}
	return n
}

// Single reports whether -seed names one seed to run. Tests log every
// step then, and skip the checks that their runs reached every outcome
// (one seed need not).
func Single() bool { return *seedFlag != 0 }

// Outcomes counts, by name, what seeded random runs reached: the actions,
// cases and corners the generator must keep reaching, or the runs'
// agreement with a model proves little.
type Outcomes map[string]int

// Require fails t for each name reached fewer than min times in seeds
// runs. It checks nothing after a run failed (the counts stopped there)
// or with -seed (one seed need not reach everything).
func (o Outcomes) Require(t testing.TB, seeds, min int, names ...string) {
	t.Helper()
	if t.Failed() || Single() {
		return
	}
	for _, name := range names {
		if o[name] < min {
			t.Errorf("outcome %q reached %d times in %d seeds, want at least %d: tune the random generator", name, o[name], seeds, min)
		}
	}
}

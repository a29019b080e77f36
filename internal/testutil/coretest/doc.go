// Package coretest is the scaffolding that the tests of weir's pure
// protocol cores share (the checkpoint coordinator, barrier handlers and
// registry, failover, the JobMaster, the weak mode's bookkeeping, the
// watermark and window cores, the high-availability role, two-phase
// commit, heartbeats): reading the arguments of datadriven script
// commands, and running seeded random interleavings.
//
// A script handler reads each argument with one call, with a default or
// required; a missing or malformed one fails the script at its line,
// naming the argument:
//
//	case "ack": // ack task=1,2 id=7 t=150ms [err=disk-full]
//		id := checkpoint.ID(coretest.MustInt(t, d, "id"))
//		tasks := coretest.Tasks(t, d, "task", e.tasks) // task=1,2 | task=(1,2) | task=0/1 | task=all
//		now := at(coretest.Dur(t, d, "t", 0))          // 0 without t=
//		err := coretest.Err(t, d, "err")               // nil without err=
//
// Tasks are written V/I (vertex/subtask) or V (subtask 0); timestamps in
// milliseconds or min/max (TS).
//
// A seeded random test runs a range of seeds, stops at the first that
// fails (its message names the seed), and then checks that the runs
// reached what they exist to exercise:
//
//	seen := coretest.Outcomes{}
//	n := coretest.Seeds{First: 1, N: 300, Short: 40}.Run(t, func(seed uint64) {
//		runRandom(t, seed, seen) // tallies what it reached in seen
//	})
//	seen.Require(t, n, 10, "restart", "fail-job")
//
// go test ./internal/failover -run TestRandomAgainstModel -seed=N runs
// seed N alone: -seed applies to every seeded test of the package, which
// then log their steps where they can (Single) and skip the checks that a
// range of seeds reached every outcome.
//
// Owns: helpers for the tests of pure cores. Must not touch: production
// code; only _test.go files import it (checked by internal/archtest).
package coretest

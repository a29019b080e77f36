// Package faults injects failures at named points of the runtime, for tests
// and for the demo's --inject-failures: every crash point of the protocol
// (processing a record, the synchronous and asynchronous parts of a
// snapshot, after a sink's pre-commit, during a commit) calls Hit, and a
// planned failure fires there as an ordinary error that fails the task.
//
// A Plan schedules a number of failures deterministically from a seed:
// failure k is armed once the job's cumulative progress (records, say)
// passes a threshold drawn over (0, Span), and it fires at the next Hit of
// the point drawn for it. Progress counts replays after restarts too, so a
// run always gets past every threshold and every failure fires exactly
// once, wherever the restarts put the job.
//
// Walkthrough:
//
//	inj := faults.New(faults.Plan{Failures: 3, Seed: 7, Span: 1_000_000})
//	// in each task, per batch:
//	inj.Progress(int64(len(batch)))
//	for _, r := range batch {
//		if err := inj.Hit(faults.Process); err != nil {
//			return err // the task fails; the restart strategy takes over
//		}
//		...
//	}
//	// at the end, for the summary:
//	for _, f := range inj.Log() { fmt.Println(f) }
//
// A nil *Injector is valid and never fires, so production code calls Hit
// unconditionally; with nothing armed a Hit costs one atomic load.
//
// Owns: the named fault points and the plan of when they fire. Must not
// touch: the code it fails; callers decide where to Hit.
package faults

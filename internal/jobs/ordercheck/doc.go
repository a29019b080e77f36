// Package ordercheck is a job that verifies record order, exactly-once
// output and bounded memory while the pipeline is under full backpressure
// and failures are injected, in the manner of Flink's
// UnalignedCheckpointITCase, for the checkpoint modes weir has (aligned
// exactly-once and at-least-once).
//
// The job:
//
//	sources (P subtasks)  each emits (subtask, 0), (subtask, 1), … (subtask, N-1)
//	  │ hash by key = subtask*Lanes + seq%Lanes
//	check (keyed)          ValueState "last seq" per key; flags a gap or a
//	  │ hash by the same key   regression computed from that state
//	pace (keyed) ─ sink    a two-phase-commit sink paced to SinkRate records
//	                       per second, committing into an in-memory Store
//
// Every key's records come from one source subtask and cross each exchange
// through one FIFO channel, so each key's committed sequence must be lane,
// lane+Lanes, lane+2*Lanes, … in that order. Keys are spread (Lanes per
// source subtask) so that every subtask of the keyed stages has work and
// every exchange channel carries data.
//
// The sink is slower than the sources, so the credits of every channel run
// out and the sources block in their output: aligned barriers queue behind
// data, and memory stays bounded only if backpressure reaches the sources.
// A payload of Payload bytes per record makes the data produced far larger
// than any heap bound a test sets.
//
// A test builds the job on an Env with a Store, runs it (with a fault
// plan), then reads Store.Committed and calls Analyse:
//
//	store := ordercheck.NewStore()
//	err := ordercheck.Build(env, ordercheck.Options{Sources: 2, Records: 20_000, Lanes: 4, SinkRate: 20_000, Store: store})
//	err = env.Execute(ctx, "ordercheck")
//	rep := ordercheck.Analyse(store.Committed(), 2, 20_000, 4)
//	// exactly-once: rep.Total() has no OutOfOrder, Duplicates or Missing
//
// Store.Flags counts what the check stage flagged over all attempts, also
// in attempts whose output was aborted: a regression there means restored
// keyed state and restored source offsets disagree.
package ordercheck

// Package stateproc reads and writes the state of weir checkpoints
// and savepoints from Go, without running a job: Flink's State Processor
// API, the Go way.
//
// Read a savepoint's keyed state into typed Go values, transform it, and
// write a new savepoint that a job restores with --from (or
// weir.WithRestoreFrom); or bootstrap a savepoint from any input (a file, a
// table) for a new job:
//
//	sp, err := stateproc.Open(ctx, "/savepoints/savepoint-7c1e")
//	totals, err := stateproc.ReadValues[string, TotalV1](ctx, sp, "totals", "total")
//	w := stateproc.NewWriter(128)                         // the job's max parallelism
//	op := stateproc.KeyedOperator[string](w, "totals", 4) // uid, parallelism
//	err = stateproc.WriteValues(op, "total", converted)   // map[string]Total
//	err = w.Keep(sp, "kafka-source", "sink")              // carried as they are
//	path, err := w.Write(ctx, "/savepoints/bootstrapped")
//
// Reads resolve the schema each checkpoint records against the Go type
// given, with the rules of a restore (docs/compatibility.md): a value
// written as TotalV1 reads as Total if Total only adds fields. Writes
// assign key groups as the engine does, so a written savepoint restores at
// the parallelism given, and re-keying state is reading it with one key,
// transforming, and writing it with another.
//
// Writer.Keep carries the operators a transformation leaves alone (a
// source's position, a sink's pending transactions) into the written
// savepoint byte for byte; operators neither written nor kept start empty
// when a job restores it.
//
// Incremental (lsm) checkpoints are read and kept too: each subtask's
// store is copied into a temporary folder (TempDir), opened read-only and
// written out in the savepoint format, so they read exactly as a savepoint
// of the same state, and a kept operator is written as a savepoint of the
// job holds it.
//
// A bootstrap writes timers (WriteEventTimers, WriteProcessingTimers) and
// operator list state (WriteOperatorList, WriteUnionList on a
// NonKeyedOperator or a KeyedWriter) too, so that a new job's timers fire
// and its sources start where the writer says:
//
//	src := stateproc.NonKeyedOperator(w, "numbers", 1)      // a new job's source
//	err = stateproc.WriteOperatorList(src, "pos", [][]int64{{1000}})
//	err = stateproc.WriteEventTimers(op, map[string][]int64{"alice": {1767229200000}})
//
// What the writer writes is what the runtime writes for the same state,
// byte for byte (docs/state-processor.md).
package stateproc

// Package weir is the typed API of the weir stream processing engine.
//
// A job is built on an Env from sources, transformations and sinks, then
// started:
//
//	env := weir.NewEnv(weir.WithParallelism(2), weir.WithCheckpointInterval(time.Second))
//	events := weir.FromSource(env, datagen.New(newEvent, datagen.WithCount(1_000_000))).UID("events")
//	byAccount := weir.KeyBy(events, func(e Event) string { return e.Account })
//	sums := weir.Reduce(byAccount, func(a, b Event) Event { a.Amount += b.Amount; return a }).UID("sum")
//	weir.SinkToTransactional(weir.Map(sums, Event.String), file.ExactlyOnce(dir, appendLine)).UID("out")
//	job, err := env.Start(ctx, "billing")
//	...
//	err = job.Wait() // or job.Stop(ctx, savepointDir), job.Cancel()
//
// Env.Execute is Start followed by Wait. The Job handle triggers
// checkpoints and savepoints, stops the job gracefully (optionally with a
// savepoint), cancels it, and reports a JobStats snapshot.
//
// Keyed state (ValueState, ListState, MapState, ReducingState) and
// processing-time timers live in a KeyedProcessFunction; operator state
// (OperatorList) in sources and sinks. State is checkpointed with Flink's
// asynchronous barrier snapshots and restored after a failure, so the
// committed output of a two-phase-commit sink (SinkToTransactional) equals
// that of a run without failures; a plain Sink (SinkTo) is at-least-once.
// Each operator should get a stable UID: state is matched to operators by
// UID on restore.
//
// Every call into user code that can block or do IO (a source's Open, Read
// and Close, a sink's Write and Flush, a transaction's Begin to Abort, a
// function's Open and Close) gets a context.Context first, which the
// runtime cancels when the task is cancelled. The ctx of every call but
// Close is also cancelled as the task ends, just before Close, whether it
// finished, failed or was cancelled: a goroutine started in Open with that
// ctx stops then, and work that must outlive it (a last flush) belongs in
// Close, whose ctx is cancelled only when the task was. Where the code runs and its
// operator state come in a *RuntimeContext (a *KeyedContext for keyed
// functions), which is not a context.Context. Optional behaviour is an
// optional interface: TimerFunction for OnTimer, Closer for Close,
// CheckpointListener for checkpoint notifications.
//
// Records move through the engine in batches; user functions are called per
// record, but the engine adds no allocation, channel operation or interface
// boxing per record.
//
// Owns: the typed API users program against. Must not touch: types users
// cannot name: an exported declaration that mentions an internal package
// fails apileak_test.go.
package weir

// Package weir is the typed API of the weir stream processing engine.
//
// A job is built on an Env from sources, transformations and sinks, then
// executed:
//
//	env := weir.NewEnv(weir.NewConfig())
//	events := weir.FromSource(env, datagen.New(func(i int64) Event { ... }, datagen.Count(1_000_000)))
//	sums := weir.Reduce(weir.KeyBy(events, func(e Event) string { return e.Account }),
//		func(a, b Event) Event { a.Amount += b.Amount; return a }).UID("sum")
//	weir.SinkTo(weir.Map(sums, Event.String), file.ExactlyOnce[string](dir, file.Lines)).UID("out")
//	err := env.Execute(ctx, "billing")
//
// Keyed state (value, list, map, reducing) and processing-time timers live
// in a KeyedProcessFunction. State is checkpointed with Flink's asynchronous
// barrier snapshots and restored after a failure, so the committed output of
// a two-phase-commit sink equals that of a run without failures. Each
// operator should get a stable UID: state is matched to operators by UID on
// restore.
//
// Records move through the engine in batches; user functions are called per
// record, but the engine adds no allocation, channel operation or interface
// boxing per record.
package weir

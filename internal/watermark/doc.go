// Package watermark holds the pure parts of event time (issue 12): the
// generation of watermarks inside a source subtask (Generator, Source) and
// their combination over a task's input channels (Valve, the valve of
// Flink's StatusWatermarkValve, written as a state machine). Both speak the
// same actions: Emit, MarkIdle, MarkActive.
//
// # Combining input channels
//
// A Valve takes events per input channel and returns what changed at its
// output:
//
//	v := watermark.NewValve(3)
//	v.Step(watermark.Advance{Ch: 0, TS: 10}) // nothing: 1 and 2 have none
//	v.Step(watermark.Advance{Ch: 1, TS: 7})
//	v.Step(watermark.Advance{Ch: 2, TS: 12}) // Emit{7}: the minimum
//	v.Step(watermark.Idle{Ch: 1})            // Emit{10}: 1 no longer holds it back
//	v.Step(watermark.Active{Ch: 1})          // nothing: 1 is behind, so not aligned
//	v.Step(watermark.Advance{Ch: 1, TS: 11}) // 1 caught up; still 10 (channel 0)
//
// The rules:
//
//   - A channel's watermark never decreases: a lower one is ignored, and
//     so is any watermark of an idle channel.
//   - The output is the minimum over the active, aligned channels, and it
//     never decreases; it is emitted only when it advances.
//   - An idle channel does not hold the output back. When it becomes
//     active again below the output it is not aligned: it is left out of
//     the minimum until its watermark reaches the output, so a returning
//     input never moves event time backwards.
//   - When every channel is idle the valve is idle (MarkIdle); the output
//     first advances to the largest watermark of any channel, as all data
//     up to it has arrived. The first channel to become active again makes
//     it active (MarkActive).
//   - An ended channel (EndOfInput) holds no watermark back: it counts as
//     active at the maximum watermark. When every channel ended, or every
//     other channel is idle, the output is MaxWatermark, which fires every
//     event-time timer: as in Flink, records that an idle channel sends
//     after it are late.
//
// # Generation at the source
//
// A Generator turns one split's record timestamps into its watermark:
// OnEvent(ts) per record, OnPeriodicEmit() once a period, returning the
// watermark or nothing. BoundedOutOfOrderness(bound) emits the largest
// timestamp minus bound minus 1 ms (a record exactly bound behind the
// newest is still on time), MinWatermark before any record, saturating
// instead of overflowing near math.MinInt64; Monotonous is bound 0. User
// generators of the public API have the same shape. Generators see only
// int64 timestamps: the source operator extracts them from its records.
//
// A Source holds one generator per split of a source subtask (each Kafka
// partition, each file) and combines them into the subtask's watermark:
//
//	s, _ := watermark.NewSource(watermark.SourceConfig{
//		NewGenerator: func() watermark.Generator { return watermark.BoundedOutOfOrderness(5) },
//		IdleTimeout:  time.Second,
//	}, watermark.MinWatermark) // or the floor restored from a checkpoint
//	s.AddSplit("p0")
//	s.AddSplit("p1")
//	s.RecordsMax("p0", 100)       // per batch: its largest timestamp
//	s.Records("p1", []int64{7, 9}) // or all of them, for any generator
//	s.Tick(now)                   // Emit{3}: min(100-5-1, 9-5-1)
//	s.FinishSplit("p1")
//	s.Tick(now + 200)             // Emit{94}: p1 no longer holds it back
//	s.EndOfInput()                // Emit{MaxWatermark}
//
// The rules:
//
//   - The output is the minimum over the splits that are assigned, not
//     finished and not idle; it never decreases and is emitted only when
//     it advances, only at Tick (the operator ticks every
//     pipeline.auto-watermark-interval). A new split starts at
//     MinWatermark and holds the output until it reports a watermark or
//     goes idle; a split whose generator regresses or says nothing keeps
//     its watermark. A finished split is forgotten.
//   - Idleness (IdleTimeout D > 0): the tick that sees a split's records
//     (or its addition) starts its quiet timer at its now; the first tick
//     at least D later makes it idle. An idle split holds nothing back
//     and its generator is not polled. So a split goes idle no earlier
//     than D after its last record and less than D plus two tick
//     intervals after it.
//   - When every split is idle, or the subtask had no split for D, the
//     subtask is idle: MarkIdle, once. The output stays where it was:
//     unlike the Valve, no flush to the largest split watermark, since an
//     idle split's records can return below it at any time.
//   - Records make their split active at once, and an idle subtask
//     returns MarkActive from Records, so the operator announces it before
//     the records and before any watermark. A split that returns behind
//     the output holds it there until it catches up (the Valve instead
//     leaves a returning channel out: there its data is already late).
//   - A floor, the watermark emitted before the restored checkpoint, is
//     where the output starts (as if emitted); nothing at or below it is
//     emitted. The task re-announces it itself if downstream needs it.
//   - EndOfInput emits MaxWatermark (after MarkActive if idle); then
//     nothing more, and feeding splits or records is a bug (a panic).
//
// Against Flink (WatermarksWithIdleness, IdlenessTimer,
// WatermarkOutputMultiplexer and CombinedWatermarkStatus): the formula, the
// per-split generators, the minimum over non-idle splits, not polling idle
// ones, no flush when all are idle and a returning split holding the
// output are the same. Different: Flink starts the quiet countdown at the
// first tick without records and goes idle strictly after the timeout
// (its documentation: up to D plus three intervals after the last
// record); here the countdown starts at the tick that last saw records
// and uses >=, one interval sooner. Flink reports activity only with the next
// watermark; here records do it at once. Flink's multiplexer with no
// split emits nothing and is never idle; here a split-less subtask goes
// idle after D, so it does not stall downstream (with D = 0 it does, as
// in Flink). Flink measures idleness with a clock paused while the task
// is backpressured; here the caller chooses the now it passes to Tick.
// Flink's punctuated emission from onEvent is not modelled: OnEvent
// returns nothing.
//
// Owns: these rules. Must not touch: channels, records, timers or clocks;
// the task loop feeds the valve the watermark and idleness events it
// polls and performs its actions (forwarding after firing timers); the
// source operator feeds the Source its splits, timestamps and ticks and
// sends the actions downstream. Pure, like the
// other cores (checked by internal/archtest).
package watermark

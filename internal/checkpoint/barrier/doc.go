// Package barrier decides, on the task side, when a checkpoint barrier has
// been received on all input channels of a task.
//
// A task with several input channels sees, per channel, a FIFO stream of data
// buffers and in-band events. The events that matter for checkpointing are
// barriers, cancel markers (an upstream task aborted a checkpoint) and
// end-of-partition (the channel is finished for good); the JobManager can also
// ask a task to abort a checkpoint out of band. The handlers here are pure
// state machines in the style of etcd raft: the task loop feeds every such
// event to Step and performs the actions it returns, in order. The handlers
// start no goroutines, read no clock and do no IO; they are called once per
// event, never per record.
//
// Two handlers implement Handler:
//
//   - Aligned gives exactly-once: once channel c delivered barrier N, the task
//     must stop reading c (Block) until every live channel delivered N, so
//     the snapshot contains exactly the records before barrier N on every
//     channel. This is Flink's SingleCheckpointBarrierHandler in its aligned
//     form (states WaitingForFirstBarrier and CollectingBarriers).
//
//   - AtLeastOnce never blocks. It counts barriers per checkpoint and asks
//     for a snapshot once every live channel delivered one; records after a
//     barrier may already be in the snapshot, so after a restore they are
//     processed again (Flink's CheckpointBarrierTracker).
//
//   - Unaligned gives exactly-once without waiting: with an alignment
//     timeout of 0, the first barrier of a checkpoint snapshots at once and
//     the task records, as channel state, the data that barrier overtook and
//     the data the other channels deliver before their own barriers. With a
//     timeout above 0 it aligns first and switches to unaligned when the
//     timer fires (Flink's alternating handler). Final checkpoints and
//     savepoints are always aligned.
//
// A walkthrough of an aligned task with three channels:
//
//	h := barrier.NewAligned(3)
//	h.Step(barrier.BarrierArrived{Channel: 0, Barrier: b7}) // [Block{0}]
//	h.Step(barrier.BarrierArrived{Channel: 2, Barrier: b7}) // [Block{2}]
//	h.Step(barrier.EndOfPartition{Channel: 1})              // [Snapshot{b7} UnblockAll{}]
//
// The end of channel 1 completes the alignment: a finished channel can never
// deliver barrier 7, so it counts as aligned. The task snapshots its
// operators, forwards barrier 7 downstream and resumes reading channels 0
// and 2. Had the JobManager aborted checkpoint 7 instead, Step(AbortRequested)
// would have returned [Abort{7} UnblockAll{}], and later barriers of 7 would
// be ignored: a checkpoint id that was snapshotted or aborted never triggers
// again, and ids older than the newest one seen are ignored.
//
// An alternating task (timeout 100ms) with three channels whose channel 2 is
// backpressured:
//
//	h := barrier.NewUnaligned(3, 100*time.Millisecond)
//	h.Step(barrier.BarrierArrived{Channel: 0, Barrier: b7}) // [ArmTimer{7, ts+100ms} Block{0}]
//	h.Step(barrier.BarrierArrived{Channel: 1, Barrier: b7}) // [Block{1}]
//	h.Step(barrier.AlignmentTimeout{ID: 7})
//	// [Snapshot{b7, Unaligned} Prioritize{7} StartRecording{7, 2} UnblockAll{}]
//	h.Step(barrier.BarrierArrived{Channel: 2, Barrier: b7, Priority: true})
//	// [StopRecording{7, 2} ChannelStateDone{7}]
//
// The timeout snapshots without channel 2's barrier. Channels 0 and 1 hold
// only data after barrier 7, so they are just unblocked; channel 2's data up
// to its barrier is recorded: what the task polls from it, and at
// StopRecording what the prioritized barrier overtook in the gate.
//
// The returned action slice is owned by the handler and reused by the next
// call to Step; the task loop must finish with it (or copy it) first.
//
// Owns: the task-side rules of alignment, unaligned recording and
// at-least-once counting. Must not touch: gates, channels, goroutines,
// clocks or storage; the task loop (internal/runtime) performs its actions
// (checked by internal/archtest).
package barrier

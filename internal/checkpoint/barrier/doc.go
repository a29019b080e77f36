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
//   - AtLeastOnce never blocks. It counts barriers per checkpoint and asks
//     for a snapshot once every live channel delivered one; records after a
//     barrier may already be in the snapshot, so after a restore they are
//     processed again (Flink's CheckpointBarrierTracker).
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
// The returned action slice is owned by the handler and reused by the next
// call to Step; the task loop must finish with it (or copy it) first.
package barrier

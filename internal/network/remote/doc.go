// Package remote is the data plane between TaskManagers: remote channels
// over one multiplexed TCP connection per TaskManager pair, with Flink's
// credit-based flow control on top of weir's per-channel credits
// (docs/design/cluster.md, section 3; frames in package wire, ledgers in
// package credit).
//
// Producer side: the TaskExecutor creates an OutChannel per remote consumer
// subtask and registers it in the PartitionRegistry; the task's
// network.Writer sends to it like to a local channel (it is a
// network.Sender). Consumer side: the TaskExecutor builds the Gate as for
// local inputs and opens an InputChannel per remote input on the Conn to
// the producer's TaskManager; what arrives is delivered into the gate
// channel, Data as a *network.Serialized the task decodes with the edge's
// codec and releases.
//
//	mgr, _ := remote.NewConnManager(remote.Config{ResourceID: "tm-1", BuildID: id}, ln, nil)
//
//	// producer subtask (job, vertex 0, subtask 1), edge 0, consumer subtask 3 elsewhere
//	out, _ := remote.NewOutChannel(remote.OutChannelConfig{Key: k, Attempt: a, Codec: codec, Credits: 4})
//	mgr.Registry().Register(out)
//	w := network.NewWriter([]network.Sender{localCh0, out}, p, pool, 1, opts...)
//
//	// consumer subtask 3, its gate channel 1 fed by that producer
//	c, _ := mgr.Conn(ctx, "tm-0", "10.0.0.5:6121")
//	in, _ := c.OpenInput(remote.InputConfig{Key: k, Attempt: a, Gate: gate, Channel: 1, OnFailure: task.Fail})
//
// Memory per channel is bounded: the producer queues at most Credits
// encoded buffers (plus the writer's overdraft and one being encoded), at
// most Credits are in flight or held by the consumer (plus one being
// decoded), so a stalled consumer stops its producers within about
// 2 × credits buffers per channel, as locally.
//
// Barriers, cancel markers, watermarks, watermark status changes, end of
// data and end of partition travel in
// band, in order with data; a priority barrier jumps the producer's queue
// (not the bytes on the stream) and carries its Seq, so the consumer knows
// which data it overtook, including data still arriving. For a consumer
// that aligns with a timeout, an OutChannel made with Announce also sends
// each periodic barrier's Announcement ahead of the queued data, and the
// consumer's InputChannel.Prioritize (its alignment timed out) sends a
// Prioritize frame that moves the queued barrier of that checkpoint ahead
// of the producer's queue, as network.Gate.Prioritize does locally.
//
// WEAKLY_CONSISTENT mode (docs/weak-consistency.md) keeps, at the
// producer, an in-flight log per output channel that outlives the
// consumer's attempts. Across TaskManagers the consumer opens its input
// with InputConfig.Weak, its own attempt and the log position to replay
// from; the producer's PartitionRegistry hands that request to the
// WeakHandler (SetWeakHandler), which makes an OutChannel for exactly that
// consumer attempt (a newer attempt supersedes it). Buffers sent with a log
// position (network.Buffer.LogBuffers, LogRecords) arrive with it, and the
// consumer's InputChannel.Release tells the producer's
// OutChannelConfig.OnRelease how far its completed snapshot covers the
// log. Every error of a failed OutChannel wraps network.ErrConsumerGone,
// so the log keeps what a lost consumer did not get.
//
// The runtime's TaskExecutor (internal/runtime/links.go) creates these
// channels for every peer on another TaskManager; local mode with several
// TaskManagers (minicluster.number-of-taskmanagers) runs them over
// loopback in one process.
//
// Failures: a malformed frame or a credit violation closes its connection
// with an Error frame and a logged error; its channels fail with
// ErrConnClosed (OutChannel.Send errs, InputChannel's OnFailure runs). A
// consumer's Close cancels its partition (the producer's Send fails with
// ErrCancelled). A sequence gap fails only that channel. Nothing panics on
// bad input. A CancelPartition or Release for a channel that is gone is
// dropped and counted (Conn.UnknownFrames), not a protocol error.
//
// Owns: TCP connections between TaskManagers, remote channels and the
// partition registry. Must not touch: tasks or the JobMaster; the
// TaskExecutor wires it (internal/runtime/links.go) (checked by
// internal/archtest).
package remote

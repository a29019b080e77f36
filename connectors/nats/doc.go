// Package nats is weir's NATS JetStream connector, on nats.go: a
// replayable source whose stream sequences live in checkpoints, an
// exactly-once sink that publishes a checkpoint's messages when it
// completes, and an at-least-once sink.
//
// # Source
//
//	events := weir.FromSource(env, nats.Source("nats://host:4222", "ORDERS", decode,
//		nats.WithSubjects("orders.eu", "orders.us"))).UID("orders")
//
// Each subject filter (or the whole stream) is a split; split i is read
// by subtask i mod p. A split's position is the stream sequence of the
// next message to read, kept in union list state (like the Kafka
// source's offsets), so a restore continues at the checkpoint's sequence
// + 1 at any parallelism; a filter the checkpoint does not know starts at
// WithStartSequence (default: the stream's first message).
//
// Limits-retention streams are read with an ordered consumer: ephemeral,
// acknowledging nothing, recreated by the client at the next sequence
// after a gap or a server restart. Work-queue streams are read with the
// stream's get API, message by message, and no consumer at all. Neither
// way has redelivery timers (ack_wait, max_ack_pending): the checkpoint,
// not the server, says what was read. On a work-queue stream, when a
// checkpoint completes (weir.CheckpointListener) each split's messages
// below the checkpoint's position are purged from the stream: only then
// is no restore going to need them. Interest-retention streams are read
// through a durable consumer (ack policy all, ack_wait 1 h, unlimited
// max_ack_pending) named "weir_<uid>_<split>_<random>", whose interest
// keeps the messages until the source acknowledges them, again only when a
// checkpoint covering them completes. A consumer cannot be moved back to a
// restored position, so every opening creates a new durable at the
// position and only then deletes the split's older ones: interest never
// lapses. A redelivery (a checkpoint slower than ack_wait) lies below the
// position and is skipped. The durable outlives the job: delete the
// "weir_<uid>_…" consumers when retiring it, or the stream keeps its
// messages for them.
//
// Watermarks: the source is a weir.SplitReader, so
// weir.FromSourceWithWatermarks generates them per split. Put Msg.Time
// (when the server stored the message) or a time from the payload into T
// and give the strategy a timestamp assigner reading it.
//
// A restore whose next message is gone from a limits stream (removed by
// its limits or a purge before the job read it) fails the job for good
// naming the missing sequences, for a whole-stream split; a split with a
// subject filter cannot tell its own messages from others' and logs a
// warning. Messages the deserializer rejects fail the job for good, naming
// stream, subject and sequence, unless WithBadRecordsTo (to a side output
// of the source as weir.BadRecord values, exactly once), WithSkipBadRecords
// (skip, log at WARN and count) or WithDeserializeErrorHandler says
// otherwise.
// WithBounded stops each split at the last message it had at open.
//
// WithMetrics exports weir_nats_source_consumer_lag{stream,split,
// operator,subtask} (the ordered consumer's pending count; for work-queue
// splits the stream sequences after the position) and
// weir_nats_source_skipped_records_total.
//
// # Exactly-once sink
//
//	weir.SinkToTransactional(results, nats.ExactlyOnce(url, "RESULTS", encode,
//		nats.WithCheckpointing(interval, timeout, maxRestartDelay))).UID("out")
//
// NATS has no transactions a client could keep open across a checkpoint,
// so the sink keeps the messages itself: each transaction (the messages
// between two barriers of one subtask) is its handle, *Txn, which the
// two-phase-commit operator stores in the checkpoint. Commit, on
// notify-complete or on a restore, publishes the messages with
// Nats-Msg-Id "<job>/<operator>/<subtask>/<run>-<n>/<index>", where run
// is random per opening of the sink and n counts its transactions (the
// sink is not told the checkpoint id; n stands for it). Publishing the
// same handle again sends the same ids, and the server drops the ones its
// duplicate window still knows.
//
// Where the stream allows it (allow_atomic, nats-server 2.12 and later),
// a commit is one atomic batch per WithBatchSize messages (default 1000,
// the server's default max_batch_size): each batch is stored whole or not
// at all, and a batch the server refuses because it holds a known message
// id was stored before. nats.go 1.56 has no API for atomic batches; the
// sink sets the Nats-Batch-Id/-Sequence/-Commit headers itself. A commit
// larger than one batch becomes visible batch by batch; a crash between
// two leaves the first ones visible until the retry stores the rest. A
// server whose max_batch_size is below WithBatchSize fails the job for
// good, naming the option.
// Otherwise (or with WithoutAtomicBatches) messages are published one by
// one with their ids and the commit waits for every acknowledgement.
//
// The duplicate-window rule: a commit published once may be published
// again until a restore from a newer checkpoint, up to the checkpoint
// interval + checkpoint timeout + the longest restart delay later (given
// by WithCheckpointing; defaults 1 s, 10 min, 1 min). Open refuses, for
// good and naming the stream and both durations, a stream whose
// duplicate_window is shorter. A job that keeps failing and restoring the
// same checkpoint for longer than the window can still duplicate that
// checkpoint's messages.
//
// Memory: a subtask holds the messages of its open transaction in
// memory. At pre-commit a transaction larger than WithSpillBytes (default
// 4 MiB) is spilled into a transaction blob in the job's checkpoint
// storage (weir.BlobSink) and its commit streams the messages back from
// there; smaller ones stay in memory and in the checkpoint until they are
// committed. WithMaxBufferedBytes bounds what is in memory (default 64
// MiB); a subtask that would exceed it fails the job for good with an
// error naming the bound (raise it or checkpoint more often).
//
// Limits: Abort cannot tell that a transaction was committed by a newer
// checkpoint that the restore skipped (a lost or corrupt checkpoint): the
// replayed messages then get new ids and are stored again. Message ids are
// not a transaction: a reader sees a commit's batches as they are stored,
// never a half batch.
//
// # At-least-once sink
//
// AtLeastOnce publishes at once (without message ids) and waits at every
// barrier for the server's acknowledgements: messages are visible early,
// and those since the last checkpoint are published again after a
// failure.
//
// Owns: NATS JetStream sources and sinks on nats.go. Must not touch: the
// runtime; it is written against the public API like any user's
// connector.
package nats

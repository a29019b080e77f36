// Package kafka is weir's Kafka connector, on franz-go: a replayable source
// whose offsets live in checkpoints, an exactly-once sink that writes one
// Kafka transaction per checkpoint and subtask, and at-least-once and
// no-guarantee sinks.
//
// # Source
//
//	events := weir.FromSource(env, kafka.Source(brokers, "payments", decode,
//		kafka.StartAt(kafka.Earliest()))).UID("payments")
//
// Subtask s of p owns the partitions q with q mod p == s and reads them
// with read_committed isolation; ownership is a pure function of the
// partition and the parallelism, so subtasks agree on it without talking.
// The offsets (partition, next offset) live in union list state: each
// subtask snapshots the partitions it owns, and a restore hands every
// subtask all of them, at any parallelism. A subtask then reads each
// partition it owns from
//
//	the checkpoint's offset     if the checkpoint holds the partition
//	the earliest offset         if not: the partition was created since
//	the StartAt offset          on a fresh start (resolved once, at open)
//
// so a rescale neither skips nor repeats a record, and group offsets play
// no part in a restore. StartAt(Committed(group, fallback)) starts a fresh
// job at a consumer group's committed offsets (OffsetFetch), and at
// fallback where the group has none or its offset is no longer in the log.
//
// Every PartitionDiscoveryInterval (10 s; 0 turns it off) an unbounded
// source asks for the topic's partition count with a Metadata request, in
// the background; each subtask starts reading the new partitions it owns
// at their earliest offset, so records written to a partition before it
// was discovered are read too, whatever StartAt says. A discovered
// partition is in the next checkpoint; a restore of an earlier one finds
// it unknown and reads it from the start again, which is right since the
// restored job had not read it.
//
// With CommitOffsetsToGroup(group) the source implements
// weir.CheckpointListener: when checkpoint id completes, each subtask
// commits the offsets id took of its partitions to group (OffsetCommit,
// generation -1, in the background), for lag monitoring only. A failed
// commit is logged and the next checkpoint's replaces it; Close waits up
// to 5 s for the last one.
//
// Records the deserializer rejects fail the job (for good: a restart would
// meet them again) unless OnDeserializeError takes them. Bounded stops
// each partition at the last stable offset seen at open, for batch jobs
// and tests; it does not discover partitions.
//
// Limits: a job that fails before its first checkpoint resolves its start
// offset again (Latest then moves on). Checkpoints written before the
// offsets were union state (round-robin list state) still restore, each
// subtask reading the partitions it was handed; in that first run a
// partition the old checkpoint lacks (created since) is read only if it
// appears after the subtask opened, and otherwise from its start after the
// next restore. The committed offsets include transaction markers: a
// group's lag reads 0 at the end of a transactional topic, as for Kafka
// consumers. Offsets of a partition whose records were deleted below the
// checkpoint's offset fail the fetch (no silent jump).
//
// # Exactly-once sink
//
//	weir.SinkToTransactional(results, kafka.ExactlyOnce(brokers, "out", encode,
//		kafka.TransactionalIDPrefix("payments-job"))).UID("out")
//
// Each subtask owns a pool of transactional ids,
// "<prefix>-<uid>-<subtask>-<k>" for k < PoolSize, and the two-phase-commit
// operator drives it:
//
//	Open(restored)   fence every id of the pool the checkpoint does not
//	                 name (InitProducerID aborts what a crashed attempt left
//	                 open), and the ids of subtasks gone after a scale-in
//	Begin            take a free id round-robin; a new producer on it
//	                 (epoch bumped) begins a transaction; the handle records
//	                 producer id and epoch
//	Write            produce into it
//	PreCommit        flush, mark Empty if nothing was written, close the
//	                 producer; no EndTxn
//	Commit           EndTxn(commit) by the handle's producer id and epoch,
//	                 from this instance or any later one
//	Abort            EndTxn(abort) likewise
//
// A committed id rests until a checkpoint whose barrier followed the commit
// completes, so that restoring the same checkpoint twice finds the id at the
// same epoch and the broker answers the repeated commit with success
// (Kafka: CompleteCommit at that epoch; kfake and transaction version 2:
// the retry of the end that bumped the epoch). Commit errors that mean the
// transaction is gone (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
// INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE) fail the job for good as
// possible data loss: the id was initialized again before the commit (a
// transaction timeout, or another job with the same prefix and uid);
// INVALID_TXN_STATE, the broker's word that it aborted the transaction,
// wraps weir.ErrTransactionLost. Abort
// reports weir.ErrAlreadyCommitted when the broker says the transaction was
// committed (INVALID_TXN_STATE with transaction version 2; otherwise
// confirmed with DescribeTransactions).
//
// The transaction timeout (default 15 min) must exceed the checkpoint
// interval, timeout and restart delay, which the sink's context does not
// expose: give them with Checkpointing; Open checks.
//
// Limit: after a scale-out then a restore of an older checkpoint at a
// lower parallelism, ids of subtasks above both parallelisms are not
// fenced; a transaction left open there holds back read_committed readers
// until the broker's transaction timeout aborts it.
//
// Owns: Kafka sources and sinks on franz-go, their offsets and
// transactions. Must not touch: the runtime; it is written against the
// public API like any user's connector.
package kafka

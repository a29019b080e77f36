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
// Subtask s of p reads the partitions q with q mod p == s on a fresh start,
// with read_committed isolation. Its operator list state holds one element
// per partition it reads, (partition, next offset), and a restore reads
// exactly the partitions whose elements it was handed, each from its
// offset; group offsets play no part. Because the runtime deals list
// elements out round-robin when the parallelism changes, each partition
// lands on exactly one new subtask with its offset: a rescale neither skips
// nor repeats a record. Records the deserializer rejects fail the job (for
// good: a restart would meet them again) unless OnDeserializeError takes
// them. Bounded stops each partition at the last stable offset seen at
// open, for batch jobs and tests.
//
// Limits: partitions added to the topic after the job's first start are
// not read until the job starts without state (the partition set is the
// checkpoint's); a job that fails before its first checkpoint resolves its
// start offset again (Latest then moves on); offsets are not committed to a
// consumer group (weir.Source has no completion callback to do it from).
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
// transaction timeout, or another job with the same prefix and uid). Abort
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
package kafka

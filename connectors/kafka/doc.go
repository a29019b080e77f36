// Package kafka is weir's Kafka connector, on franz-go: a replayable source
// whose offsets live in checkpoints, an exactly-once sink that writes one
// Kafka transaction per checkpoint and subtask, and at-least-once and
// no-guarantee sinks.
//
// # Source
//
//	events := weir.FromSource(env, kafka.Source(brokers, "payments", decode,
//		kafka.WithStartOffset(kafka.Earliest()))).UID("payments")
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
//	the WithStartOffset offset  on a fresh start (resolved once, at open)
//
// so a rescale neither skips nor repeats a record, and group offsets play
// no part in a restore. WithStartOffset(Committed(group, fallback)) starts
// a fresh job at a consumer group's committed offsets (OffsetFetch), and
// at fallback where the group has none or its offset is no longer in the
// log.
//
// Every WithPartitionDiscoveryInterval (10 s; 0 turns it off) an unbounded
// source asks for the topic's partition count with a Metadata request, in
// the background; each subtask starts reading the new partitions it owns
// at their earliest offset, so records written to a partition before it
// was discovered are read too, whatever WithStartOffset says. A discovered
// partition is in the next checkpoint; a restore of an earlier one finds
// it unknown and reads it from the start again, which is right since the
// restored job had not read it.
//
// With WithCommitOffsetsToGroup(group) the source implements
// weir.CheckpointListener: when checkpoint id completes, each subtask
// commits the offsets id took of its partitions to group (OffsetCommit,
// generation -1, in the background), for lag monitoring only. A failed
// commit is logged and the next checkpoint's replaces it; Close waits up
// to 5 s for the last one.
//
// Records the deserializer rejects fail the job (for good: a restart would
// meet them again) unless WithBadRecordsTo sends them to a side output of
// the source as weir.BadRecord values (exactly once, like the main
// output), WithSkipBadRecords skips them (logged at WARN with partition
// and offset, counted in weir_kafka_source_skipped_records_total with
// WithMetrics), or WithDeserializeErrorHandler takes them.
// WithBounded stops each partition at the last stable offset seen at open,
// for batch jobs and tests; it does not discover partitions.
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
//		kafka.WithTransactionalIDPrefix("payments-job"))).UID("out")
//
// Each subtask owns a pool of transactional ids,
// "<prefix>-<uid>-<subtask>-<k>" for k < WithPoolSize, and the two-phase-commit
// operator drives it:
//
//	Open(restored)   fence every id of the pool the checkpoint does not
//	                 name (InitProducerID aborts what a crashed attempt left
//	                 open), the ids of subtasks gone after a scale-in, and
//	                 those of higher subtasks it would take over that a
//	                 transaction coordinator knows (DescribeTransactions,
//	                 subtask after subtask until one has none: a run at a
//	                 higher parallelism that ended before a checkpoint)
//	Begin            take a free id round-robin; a new producer on it
//	                 (epoch bumped) begins a transaction; the handle records
//	                 producer id and epoch
//	Write            produce into it
//	PreCommit        flush, mark Empty if nothing was written, count the
//	                 records and bytes in the handle, close the producer;
//	                 no EndTxn
//	Commit           EndTxn(commit) by the handle's producer id and epoch,
//	                 from this instance or any later one
//	Abort            EndTxn(abort) likewise
//
// A committed id rests until a checkpoint whose barrier followed the commit
// completes, so that restoring the same checkpoint twice finds the id at the
// same epoch and the broker answers the repeated commit with success
// (Kafka: CompleteCommit at that epoch; kfake and transaction version 2:
// the retry of the end that bumped the epoch).
//
// # A commit with an unknown outcome
//
// When the connection to the transaction coordinator fails after an
// EndTxn (commit or abort) was sent, the sink cannot tell whether the
// broker ended the transaction. franz-go resends the request first; if it
// gives up, the sink logs a warning and asks the broker by resending the
// same EndTxn at the same producer epoch, backing off up to 1 s, for up
// to 60 s. The coordinator answers a resend as it answered the first
// (success if it committed; a Kafka broker still completing a
// PREPARE_COMMIT answers CONCURRENT_TRANSACTIONS until it is done), and a
// request that never arrived takes effect now; no other transaction can
// exist at that epoch, since every transaction begins on a newly
// initialized producer and a committed id rests as described above. So
// the commit returns success once, the records are visible once, and
// nothing is left open. The sink does not initialize the producer again
// to learn the outcome: InitProducerID aborts a transaction still ONGOING
// (kfake at once; Kafka too, though it completes one already in
// PREPARE_COMMIT), which is where a commit that never reached the broker
// leaves it. If no answer comes, the commit fails the task with "commit
// outcome unknown", naming the transactional id (the operator adds the
// checkpoint); the restore commits the transaction again from the
// checkpoint's handle, which is idempotent.
//
// # Data loss after the transaction timeout
//
// A broker aborts a transaction open longer than its transaction timeout,
// pre-committed or not. If the broker (or the sink's way to it) is away
// longer than that between a pre-commit and its commit, the records of a
// completed checkpoint are gone, and a restart cannot write them again.
// The commit then fails the job for good (weir.Unrecoverable, no restart)
// with an error that starts "DATA LOSS", names the transactional id, the
// records and bytes the transaction held (counted in the handle at
// pre-commit) and the timeout, says to raise kafka.WithTransactionTimeout and
// the broker's transaction.max.timeout.ms with it, and wraps
// weir.ErrTransactionLost; the operator prefixes the checkpoint id. The
// same fields are logged at ERROR level as the data-loss alert. This is
// the broker's INVALID_TXN_STATE answer (kfake, and Kafka with transaction
// version 2), or a fenced epoch (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH,
// INVALID_PRODUCER_ID_MAPPING) where DescribeTransactions shows the
// transaction aborted at the next epoch (how Kafka leaves a timed-out
// one). A fenced epoch without that is "POSSIBLE DATA LOSS", also fatal:
// the id was initialized again before the commit (the timeout, or another
// job with the same prefix and uid), unless an older checkpoint than the
// last one is being restored. Abort reports weir.ErrAlreadyCommitted when
// the broker says the transaction was committed (INVALID_TXN_STATE with
// transaction version 2; otherwise confirmed with DescribeTransactions).
//
// The transaction timeout (default 15 min, the broker's default
// transaction.max.timeout.ms; franz-go alone would ask for 40 s) must
// exceed the checkpoint interval, timeout and restart delay, which the
// sink's context does not expose: give them with WithCheckpointing; Open
// checks. The sink value is a weir.TransactionTimeouter, so that the
// JobManager can fail a job whose checkpoints cannot complete before its
// open transactions would time out. A broker whose
// transaction.max.timeout.ms is below the sink's timeout refuses its
// producers (INVALID_TRANSACTION_TIMEOUT); Open or Begin then fails the
// job for good with an error naming both settings and the broker's value
// (DescribeConfigs), not a restart loop.
//
// # Tested against
//
// kfake, in process, for the whole suite and the faults only a proxy can
// place on cue; and Apache Kafka 4.1 (KRaft, one node, started by
// .ci/kafka.sh or by the test itself) for the same suite
// (WEIR_KAFKA_BROKERS), a broker SIGKILLed and restarted mid-run, commits
// after the transaction timeout, and transaction.max.timeout.ms;
// docs/guarantees.md lists which test shows what on which broker.
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

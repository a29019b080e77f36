package checkpoint

import (
	"encoding/binary"
	"strconv"
	"time"
)

// ID identifies a checkpoint within a job. IDs increase strictly; a restored
// job continues numbering after the checkpoint it restored from.
type ID int64

// Kind tells a regular checkpoint from a final one. A final checkpoint is
// taken after every source reached the end of its input; once it completes,
// tasks commit and finish.
type Kind uint8

const (
	// Periodic is a checkpoint triggered by the interval timer or on demand.
	Periodic Kind = iota
	// Final is the checkpoint taken after all sources ended.
	Final
	// Savepoint is a completed checkpoint copied into a folder the user
	// owns: self-contained, relocatable, never deleted by retention.
	Savepoint
)

// String returns the kind's name as used in logs and golden files.
func (k Kind) String() string {
	switch k {
	case Final:
		return "final"
	case Savepoint:
		return "savepoint"
	}
	return "periodic"
}

// Barrier is the in-band marker a source injects into its output after it
// snapshotted its offsets. Records before the barrier belong to checkpoint ID,
// records after it to later checkpoints.
type Barrier struct {
	ID        ID
	Timestamp time.Time
	Kind      Kind
}

// TaskID names one subtask of the execution graph: the job vertex (an
// operator chain) and the subtask index within it.
type TaskID struct {
	Vertex  int
	Subtask int
}

// StateFile references one file written into checkpoint storage. Path is
// relative to the job's checkpoint root (e.g. "chk-7/3-1-keyed"), so a
// checkpoint directory can be inspected or moved as a unit.
type StateFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// KeyGroupOffset locates one key group's bytes inside a keyed state file.
type KeyGroupOffset struct {
	KeyGroup int   `json:"kg"`
	Offset   int64 `json:"off"`
	Length   int64 `json:"len"`
}

// KeyedStateHandle is a keyed-state snapshot of one operator subtask: a file
// holding one block per key group, and the index of those blocks. A restoring
// subtask reads only the key groups of its own range, which is what makes
// rescaling by key group possible.
type KeyedStateHandle struct {
	File      StateFile        `json:"file"`
	KeyGroups []KeyGroupOffset `json:"keyGroups"`
}

// ChannelStateHandle is the channel state of one subtask in an unaligned
// checkpoint: the in-flight records its input channels held when the
// barrier overtook them, recorded by the consumer. They are stored in one
// file (layout in internal/checkpoint/storage, channelfile.go) as frames
// in file order; each input channel's frames are grouped into segments.
// The handle is set on the operator chain's head operator, whose inputs
// the channels are.
type ChannelStateHandle struct {
	File     StateFile           `json:"file"`
	Channels []InputChannelState `json:"channels"`
	// BatchFormat is the encoding of the recorded batches:
	// ChannelBatchTimed (records, then their event timestamps when the
	// batch has them). 0 is the format before event time, which this
	// build cannot decode.
	BatchFormat int `json:"batchFormat,omitempty"`
}

// ChannelBatchTimed is the batch format of channel state since event
// time: a uvarint of count<<1 | timed, the records, and for a timed batch
// the timestamps as zigzag deltas.
const ChannelBatchTimed = 2

// InputChannelState locates the recorded records of one input channel: the
// channel from producer subtask Producer of the vertex whose head operator
// is ProducerUID into input Input of the consumer. The producer's identity
// and parallelism are kept so that a restore can refuse a job whose
// channels no longer match (in-flight records cannot be redistributed).
type InputChannelState struct {
	Input               int       `json:"input"` // index among the vertex's inputs
	ProducerUID         string    `json:"producerUid"`
	ProducerParallelism int       `json:"producerParallelism"`
	Producer            int       `json:"producer"` // producer subtask
	Segments            []Segment `json:"segments"` // in stream order
	Records             int64     `json:"records"`
}

// Segment is a byte range of a channel-state file holding whole frames of
// one channel, consecutive in the channel's stream and in the file.
type Segment struct {
	Offset int64 `json:"off"`
	Length int64 `json:"len"`
}

// OperatorSubtaskState is what one operator (matched by its stable UID) of one
// subtask contributes to a checkpoint.
type OperatorSubtaskState struct {
	UID string `json:"uid"`
	// Keyed is nil for operators without keyed state.
	Keyed *KeyedStateHandle `json:"keyed,omitempty"`
	// Operator holds non-keyed list state (source offsets, pending sink
	// transactions) inline: state name -> list of encoded elements. It is
	// small by contract, so it lives in the metadata itself.
	Operator map[string][][]byte `json:"operator,omitempty"`
	// Channels is the channel state of an unaligned checkpoint, set on the
	// chain's head operator only; nil for aligned checkpoints.
	Channels *ChannelStateHandle `json:"channels,omitempty"`
	// Incremental is keyed state as the files of an LSM store (an
	// incremental checkpoint); set instead of Keyed.
	Incremental *IncrementalKeyedStateHandle `json:"incremental,omitempty"`
	// Weak is set on the chain's head operator in a WEAKLY_CONSISTENT
	// per-task snapshot: how far the task read each input channel and
	// wrote each output channel, for the in-flight logs.
	Weak *WeakPositions `json:"weak,omitempty"`
	// Blobs are the files a two-phase-commit sink's pending transactions
	// keep their payloads in (weir.TransactionBlobs): in the job's shared
	// area ("shared/blob-…") for a checkpoint, in the checkpoint's own
	// folder for a savepoint (which copies them). The handles in Operator
	// name them by base name (BlobName); listing them here makes the
	// shared-file registry keep each as long as a retained checkpoint
	// references it (SharedRefs). Version 4 of _metadata.
	Blobs []StateFile `json:"blobs,omitempty"`
	// Schemas are the rows of the operator's state table as this subtask
	// registered them, carried by the acknowledgement only: the JobManager
	// merges the subtasks' rows into OperatorState.States, and a _metadata
	// file never holds them here (storage refuses to write or read them).
	// Nothing fills them yet (docs/design/state-evolution.md §2.1, work
	// plan step 5).
	Schemas []StateSchema `json:"schemas,omitempty"`
}

// WeakPositions are a task's channel positions in a WEAKLY_CONSISTENT
// snapshot (docs/weak-consistency.md). A restored task asks each producer
// to replay its log after Inputs[ch]; each of its output logs skips what
// the earlier attempt emitted beyond Outputs; Determinants is how many
// entries of the task's log of consumed channels the snapshot covers.
type WeakPositions struct {
	// Inputs are per gate channel: buffers and records consumed.
	Inputs []WeakChannelPosition `json:"inputs,omitempty"`
	// Outputs are per output edge, per consumer subtask: records sent.
	Outputs      [][]uint64 `json:"outputs,omitempty"`
	Determinants uint64     `json:"determinants,omitempty"`
	// Ended is set when the task's input had ended (its final snapshot,
	// or one taken while it waited for that): a restored task ends its
	// input again at once, since no producer will send end of data again.
	Ended bool `json:"ended,omitempty"`
	// Logs is the file holding what the task's output logs retained at
	// the snapshot (nil for a task without outputs): a task restarted
	// after its TaskManager was lost rebuilds them from it.
	Logs *StateFile `json:"logs,omitempty"`
}

// WeakChannelPosition is how far a consumer read one input channel, and
// what of the channel's events before that point a restored task must
// know: they are not replayed. Watermark is the last watermark read (if
// Marked), Idle the channel's last status, EndOfData whether it ended.
type WeakChannelPosition struct {
	Buffers   uint64 `json:"buffers"`
	Records   uint64 `json:"records"`
	Watermark int64  `json:"watermark,omitempty"`
	Marked    bool   `json:"marked,omitempty"`
	Idle      bool   `json:"idle,omitempty"`
	EndOfData bool   `json:"eod,omitempty"`
}

// TaskState is the acknowledgement payload of one subtask: the states of the
// operators chained in it.
type TaskState struct {
	Task      TaskID                 `json:"task"`
	Operators []OperatorSubtaskState `json:"operators"`
	// Metrics are measurements for monitoring, carried by the
	// acknowledgement; they are not part of the checkpoint's metadata.
	Metrics SubtaskMetrics `json:"metrics,omitzero"`
}

// SubtaskMetrics are one subtask's measurements of one checkpoint (Flink's
// CheckpointMetrics). The bytes of in-flight data a subtask persisted as
// channel state are not here: its acknowledged ChannelStateHandle has them.
type SubtaskMetrics struct {
	// StartDelayNanos is the time from the trigger to the first barrier of
	// the checkpoint reaching the subtask (0 for sources): how long the
	// barrier travelled behind queued data.
	StartDelayNanos int64 `json:"startDelayNanos,omitempty"`
	// AlignmentNanos is the time from the first barrier to the last one,
	// across the subtask's input channels.
	AlignmentNanos int64 `json:"alignmentNanos,omitempty"`
	// AlignmentBufferedBytes is, for an aligned snapshot, the encoded size
	// of the records queued in the channels alignment had blocked when it
	// ended: the data held back by alignment.
	AlignmentBufferedBytes int64 `json:"alignmentBufferedBytes,omitempty"`
	// ProcessedBytes approximates the bytes of records the subtask
	// processed during alignment (records counted, times the mean encoded
	// record size of the data it sampled or recorded).
	ProcessedBytes int64 `json:"processedBytes,omitempty"`
	// Unaligned is set when the subtask snapshotted unaligned.
	Unaligned bool `json:"unaligned,omitempty"`
	// SyncNanos is the synchronous part of the subtask's snapshot (the
	// operators' capture and forwarding the barrier); AsyncNanos the
	// asynchronous part (writing the state, and channel state, to
	// checkpoint storage) until the acknowledgement.
	SyncNanos  int64 `json:"syncNanos,omitempty"`
	AsyncNanos int64 `json:"asyncNanos,omitempty"`
}

// OperatorState gathers the subtask states of one operator across the job.
type OperatorState struct {
	UID            string              `json:"uid"`
	Parallelism    int                 `json:"parallelism"`
	MaxParallelism int                 `json:"maxParallelism"`
	Subtasks       []SubtaskStateEntry `json:"subtasks"`
	// States is the operator's state table: one row per state its
	// checkpointed bytes hold, so that a restore can check the program's
	// types against the stored ones before deploying anything. A non-empty
	// table makes storage write _metadata format version 3; without one the
	// file stays version 1 or 2, readable by older builds. Nothing fills it
	// yet: the runtime wiring is a later step of
	// docs/design/state-evolution.md (§2.1, work plan step 5).
	States []StateSchema `json:"states,omitempty"`
}

// SubtaskStateEntry is one subtask's state of an operator.
type SubtaskStateEntry struct {
	Subtask int                  `json:"subtask"`
	State   OperatorSubtaskState `json:"state"`
}

// Metadata describes a completed checkpoint. It is written last, atomically,
// into chk-<ID>/_metadata; a checkpoint exists only once its metadata does.
type Metadata struct {
	JobID     string          `json:"jobId"`
	ID        ID              `json:"id"`
	Kind      Kind            `json:"kind"`
	Timestamp time.Time       `json:"timestamp"`
	Operators []OperatorState `json:"operators"`
}

// Operator returns the state of the operator with the given uid, or nil.
func (m *Metadata) Operator(uid string) *OperatorState {
	for i := range m.Operators {
		if m.Operators[i].UID == uid {
			return &m.Operators[i]
		}
	}
	return nil
}

// Scopes of a StateSchema row: where the state's bytes live and which of a
// row's schemas apply (docs/design/state-evolution.md §2.1).
const (
	// ScopeKeyed is a keyed state (value, list, map, reducing, with or
	// without TTL): Key and Value are set, UserKey for map state.
	ScopeKeyed = "keyed"
	// ScopeTimers is an operator's timers of one kind (the row's Kind tells
	// processing from event time); the name is "" as in the keyed blocks,
	// and only Key is set.
	ScopeTimers = "timers"
	// ScopeOperator is a (union) operator list state: Value is the element.
	ScopeOperator = "operator"
	// ScopeChannel is the records in flight on one input of an unaligned
	// checkpoint, named "in<i>": Value is the record type.
	ScopeChannel = "channel"
	// ScopeWeakLog is one output log of a WEAKLY_CONSISTENT snapshot, named
	// "out<k>": Value is the record type.
	ScopeWeakLog = "weak-log"
)

// StateSchema describes the bytes of one registered state of an operator:
// a row of OperatorState.States. The schemas are codec.Schema encodings
// (codec.AppendSchema) kept as bytes, because this package is a pure core
// that may not import internal/codec (internal/archtest); storage checks
// that each decodes when it reads the metadata. In JSON they are base64.
type StateSchema struct {
	// Name is the registered name ("total", "two-phase-commit",
	// "union/weir.event-time"); "" for timers.
	Name string `json:"name"`
	// Scope is one of the Scope constants.
	Scope string `json:"scope"`
	// Kind is the state's kind as internal/state numbers it, with the TTL
	// flag; for timers the timer section's kind.
	Kind uint8 `json:"kind"`
	// Key is the operator's key type (keyed and timers scopes).
	Key []byte `json:"key,omitempty"`
	// KeyHash is the key's hash class ("string", "int64", "stable:pkg.T"):
	// keys may change type only within one, since the hash places them in
	// key groups (docs/design/state-evolution.md §5).
	KeyHash string `json:"keyHash,omitempty"`
	// UserKey is a map state's user key type.
	UserKey []byte `json:"userKey,omitempty"`
	// Namespace is reserved: empty until windows move to namespaces.
	Namespace []byte `json:"namespace,omitempty"`
	// Value is the value, list element, map value, operator list element,
	// transaction handle or record type.
	Value []byte `json:"value,omitempty"`
	// Fingerprint is SchemaFingerprint of the row: a restore compares it
	// first, since the common case is an unchanged type, and tools show it.
	Fingerprint string `json:"fp"`
}

// SchemaFingerprint returns the fingerprint a row must carry: FNV-1a 64 in
// 16 lowercase hex digits over Key, UserKey, Namespace and Value, each
// preceded by its length as a uvarint. The lengths keep a schema moving
// from one field to its neighbour (an empty Key and a UserKey against that
// Key and no UserKey) from hashing alike. FNV-1a is written out here
// because hash/fnv is not among the packages a pure core may import.
func SchemaFingerprint(s StateSchema) string {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	write := func(p []byte) {
		for _, c := range p {
			h ^= uint64(c)
			h *= prime64
		}
	}
	var n [binary.MaxVarintLen64]byte
	for _, b := range [...][]byte{s.Key, s.UserKey, s.Namespace, s.Value} {
		write(binary.AppendUvarint(n[:0], uint64(len(b))))
		write(b)
	}
	fp := strconv.FormatUint(h, 16)
	for len(fp) < 16 {
		fp = "0" + fp
	}
	return fp
}

package inspect

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Report is what Inspect finds in one verified checkpoint. Its JSON form is
// what `weir checkpoints inspect --json` prints.
type Report struct {
	// Path is the absolute chk-<n> directory.
	Path      string        `json:"path"`
	Job       string        `json:"job"`
	ID        checkpoint.ID `json:"id"`
	Kind      string        `json:"kind"` // "periodic" or "final"
	Timestamp time.Time     `json:"timestamp"`
	// Operators are in metadata order (the job graph's topological order).
	Operators []Operator `json:"operators"`
	// ChannelState lists, per subtask, the in-flight records an unaligned
	// checkpoint stored, in operator and subtask order. Empty for aligned
	// checkpoints; never nil, so the JSON shows [] rather than null.
	ChannelState []ChannelState `json:"channelState"`
	// SharedFiles lists the files of the job's shared area that the
	// checkpoint's LSM stores reference (incremental checkpoints), by
	// name, each with the subtasks that reference it. Empty for full
	// checkpoints and savepoints; never nil.
	SharedFiles []SharedFile `json:"sharedFiles"`
	Totals      Totals       `json:"totals"`
}

// Operator is one operator (by stable UID) and its subtasks' state.
type Operator struct {
	UID            string    `json:"uid"`
	Parallelism    int       `json:"parallelism"`
	MaxParallelism int       `json:"maxParallelism"`
	Subtasks       []Subtask `json:"subtasks"`
}

// Subtask is what one operator subtask put into the checkpoint.
type Subtask struct {
	Index int `json:"subtask"`
	// Keyed is nil for an operator without keyed state in the canonical
	// format.
	Keyed *Keyed `json:"keyed,omitempty"`
	// Incremental is the subtask's LSM store when the checkpoint is an
	// incremental one of the lsm backend; nil otherwise.
	Incremental *Incremental `json:"incremental,omitempty"`
	// OperatorState is the non-keyed list state, sorted by name.
	OperatorState []ListState `json:"operatorState,omitempty"`
}

// Range is a half-open key-group range [Start, End).
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Keyed describes one subtask's keyed state file.
type Keyed struct {
	File   string `json:"file"` // relative to the job directory
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Assigned is the range keygroup.RangeFor gives this subtask at the
	// operator's parallelism: the key groups it owns.
	Assigned Range `json:"assigned"`
	// Covered spans the key groups that have a block, [first, last+1); nil
	// if the file holds no block (no key had state). Only non-empty key
	// groups have blocks, so Covered may be narrower than Assigned.
	Covered *Range `json:"covered"`
	// Blocks is the number of key-group blocks in the file.
	Blocks int `json:"blocks"`
	// OutsideAssigned counts blocks of key groups outside Assigned; the
	// runtime never writes those, so a non-zero value means the metadata
	// does not describe what this build would restore.
	OutsideAssigned int `json:"outsideAssigned"`
	// States are the keyed states found in the blocks, sorted by name.
	States []KeyedState `json:"states"`
	// Timers is the number of registered processing-time timers and
	// TimerBytes the size of their sections' payloads; EventTimers and
	// EventTimerBytes the same for event-time timers (windows, and
	// KeyedProcess functions' RegisterEventTimeTimer).
	Timers          int64 `json:"timers"`
	TimerBytes      int64 `json:"timerBytes"`
	EventTimers     int64 `json:"eventTimers"`
	EventTimerBytes int64 `json:"eventTimerBytes"`
}

// KeyedState is one named keyed state within one file (or, in Totals,
// summed over an operator's subtasks).
type KeyedState struct {
	Name string `json:"name"`
	// Kind is "value", "list", "map" or "reducing".
	Kind string `json:"kind"`
	// TTL is set for a state registered with a time to live: its values
	// carry their last access time (state.KindTTL in the file).
	TTL bool `json:"ttl"`
	// Entries is the number of keys with state (for list and map state:
	// keys, not elements).
	Entries int64 `json:"entries"`
	// Bytes is the size of the state's section payloads.
	Bytes int64 `json:"bytes"`
	// KeyGroups is the number of key groups in which the state has keys.
	KeyGroups int `json:"keyGroups"`
}

// ListState is one operator (non-keyed) list state of one subtask.
type ListState struct {
	// Name is the state's name as registered, without the union prefix.
	Name string `json:"name"`
	// Union is true for union list state (stored under "union/<name>"),
	// which a restore hands whole to every subtask instead of splitting
	// it round-robin.
	Union    bool  `json:"union"`
	Elements int   `json:"elements"`
	Bytes    int64 `json:"bytes"`
	// TwoPhaseCommit is set for the state of a two-phase-commit sink.
	TwoPhaseCommit *TwoPhaseCommit `json:"twoPhaseCommit,omitempty"`
}

// TwoPhaseCommit summarises a two-phase-commit sink's state: transactions
// pre-committed for checkpoints that had not been confirmed complete when
// the snapshot was taken, and the transaction opened after the barrier.
type TwoPhaseCommit struct {
	// Pending lists the checkpoint ids of the pending transactions, over
	// all elements of the list, in element order.
	Pending []checkpoint.ID `json:"pending"`
	// Open counts the elements holding an open transaction.
	Open int `json:"open"`
}

// ChannelState describes the channel state of one subtask: the records
// that were in flight on its input channels when an unaligned checkpoint's
// barrier overtook them, stored in one file.
type ChannelState struct {
	// Operator is the UID of the chain's head operator, which holds the
	// handle; Subtask its subtask index.
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	File     string `json:"file"` // relative to the job directory
	Size     int64  `json:"size"`
	CRC32C   uint32 `json:"crc32c"`
	// Inputs are the input channels with recorded data (or recorded
	// empty), in the handle's order.
	Inputs []InputChannel `json:"inputs"`
}

// InputChannel is the recorded part of one input channel: from subtask
// Producer of the vertex headed by ProducerUID into input Input.
type InputChannel struct {
	Input               int    `json:"input"`
	ProducerUID         string `json:"producerUid"`
	Producer            int    `json:"producer"`
	ProducerParallelism int    `json:"producerParallelism"`
	// GateChannel is the consumer's gate channel its frames carry, -1 if
	// nothing was recorded.
	GateChannel int `json:"gateChannel"`
	// Segments and Batches count the file's byte ranges of this channel
	// and the frames (one recorded batch each) in them.
	Segments int `json:"segments"`
	Batches  int `json:"batches"`
	// Records is the record count the metadata gives; Bytes the size of
	// the channel's segments, frame headers included.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// Incremental describes one subtask's LSM store in an incremental
// checkpoint: its files in the shared area (listed in Report.SharedFiles),
// its private files in the checkpoint's folder, its state catalogue, and
// its timers.
type Incremental struct {
	StoreID string `json:"storeId"`
	// KeyGroups is the range of the subtask that wrote the store; Assigned
	// the range keygroup.RangeFor gives this subtask. They differ only in
	// a damaged or hand-edited checkpoint.
	KeyGroups Range `json:"keyGroups"`
	Assigned  Range `json:"assigned"`
	// States is the store's catalogue, sorted by name. Entry counts are
	// not given: they would take opening the store.
	States []StoreState `json:"states"`
	// SharedFiles and SharedBytes count the store's files in the shared
	// area.
	SharedFiles int   `json:"sharedFiles"`
	SharedBytes int64 `json:"sharedBytes"`
	// Private are the store's files that belong to this checkpoint only
	// (MANIFEST, OPTIONS, …), in handle order.
	Private []PrivateFile `json:"private"`
	// TimersFile is the timers' file (canonical keyed format), "" if the
	// subtask had none; TimersSize is its size, Timers counts its
	// processing-time timers and EventTimers its event-time timers.
	TimersFile  string `json:"timersFile,omitempty"`
	TimersSize  int64  `json:"timersSize"`
	Timers      int64  `json:"timers"`
	EventTimers int64  `json:"eventTimers"`
	// FullSize is the bytes of every file the store references;
	// UploadedSize those this checkpoint uploaded itself.
	FullSize     int64 `json:"fullSize"`
	UploadedSize int64 `json:"uploadedSize"`
}

// StoreState is one entry of an LSM store's state catalogue.
type StoreState struct {
	Name string `json:"name"`
	// Kind is "value", "list", "map" or "reducing"; TTL is set for a
	// state with a time to live.
	Kind string `json:"kind"`
	TTL  bool   `json:"ttl"`
	// ID prefixes the state's keys in the store.
	ID uint16 `json:"id"`
}

// PrivateFile is a store file kept in the checkpoint's own folder.
type PrivateFile struct {
	// Local is the file's name in the store.
	Local  string `json:"local"`
	File   string `json:"file"` // relative to the job directory
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// SharedFile is a file of the job's shared area that the checkpoint
// references. Other retained checkpoints may reference it too; the
// JobManager deletes it once none does.
type SharedFile struct {
	File   string `json:"file"` // relative to the job directory: shared/<name>
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Local is the file's name in the store that wrote it.
	Local string `json:"local"`
	// ReferencedBy lists the operator subtasks whose stores use it, in
	// metadata order (after a rescale, one file can be in several).
	ReferencedBy []SubtaskRef `json:"referencedBy"`
}

// SubtaskRef names one operator subtask.
type SubtaskRef struct {
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
}

// Totals sums the report.
type Totals struct {
	Operators int `json:"operators"`
	Subtasks  int `json:"subtasks"`
	// KeyedFiles and KeyedBytes count the keyed state files and their
	// sizes; KeyGroups the key-group blocks in them.
	KeyedFiles int   `json:"keyedFiles"`
	KeyedBytes int64 `json:"keyedBytes"`
	KeyGroups  int   `json:"keyGroups"`
	// Stores counts the subtasks' LSM stores (incremental checkpoints);
	// SharedFiles and SharedBytes the distinct shared files they reference,
	// PrivateFiles and PrivateBytes their files in the checkpoint's folder
	// (timers files included). FullBytes sums the stores' full sizes,
	// UploadedBytes what this checkpoint uploaded of them.
	Stores        int   `json:"stores"`
	SharedFiles   int   `json:"sharedFiles"`
	SharedBytes   int64 `json:"sharedBytes"`
	PrivateFiles  int   `json:"privateFiles"`
	PrivateBytes  int64 `json:"privateBytes"`
	FullBytes     int64 `json:"fullBytes"`
	UploadedBytes int64 `json:"uploadedBytes"`
	// KeyedStates sums each operator's keyed states over its subtasks, in
	// operator order, then by name.
	KeyedStates []OperatorKeyedState `json:"keyedStates"`
	// Timers and EventTimers count the processing-time and event-time
	// timers of every subtask.
	Timers      int64 `json:"timers"`
	EventTimers int64 `json:"eventTimers"`
	// ChannelStateFiles and ChannelStateBytes count the channel-state
	// files and their sizes, InFlightRecords the records stored in them.
	ChannelStateFiles int   `json:"channelStateFiles"`
	ChannelStateBytes int64 `json:"channelStateBytes"`
	InFlightRecords   int64 `json:"inFlightRecords"`
	// OperatorStates sums each operator's list states over its subtasks,
	// in operator order, then by name.
	OperatorStates []OperatorListState `json:"operatorStates"`
}

// OperatorKeyedState is a keyed state summed over an operator's subtasks.
type OperatorKeyedState struct {
	Operator string `json:"operator"`
	KeyedState
}

// OperatorListState is an operator list state summed over an operator's
// subtasks.
type OperatorListState struct {
	Operator string `json:"operator"`
	Name     string `json:"name"`
	Union    bool   `json:"union"`
	Elements int    `json:"elements"`
	Bytes    int64  `json:"bytes"`
}

package kafka

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

// Option configures a source or a sink. Options that do not apply to the
// connector they are given to are ignored.
type Option struct {
	apply func(*options)
}

// StartOffset says where a source starts reading a partition that its
// checkpoint does not cover (a fresh start).
type StartOffset struct {
	kind int8 // startEarliest, startLatest, startTime, startCommitted
	ms   int64
	// Committed: the group, and the fallback's kind and ms.
	group  string
	fbKind int8
	fbMs   int64
}

const (
	startEarliest int8 = iota
	startLatest
	startTime
	startCommitted
)

// Earliest starts at the first record still in the partition.
func Earliest() StartOffset { return StartOffset{kind: startEarliest} }

// Latest starts after the last committed record at the moment the source
// first opens: only records written later are read.
func Latest() StartOffset { return StartOffset{kind: startLatest} }

// AtTime starts at the first record whose timestamp is at or after t (at the
// end if there is none).
func AtTime(t time.Time) StartOffset { return StartOffset{kind: startTime, ms: t.UnixMilli()} }

// Committed starts each partition at the offset consumer group group has
// committed for it (OffsetFetch, at the source's first open), and the
// partitions without one, or whose committed offset is no longer in the
// log, at fallback. A Committed fallback stands for its own fallback. The
// group is only read: the source neither joins it nor commits to it
// unless WithCommitOffsetsToGroup says so.
func Committed(group string, fallback StartOffset) StartOffset {
	if fallback.kind == startCommitted {
		fallback = fallback.fallback()
	}
	return StartOffset{kind: startCommitted, group: group, fbKind: fallback.kind, fbMs: fallback.ms}
}

// fallback is what a Committed start offset uses where the group has no
// offset.
func (s StartOffset) fallback() StartOffset { return StartOffset{kind: s.fbKind, ms: s.fbMs} }

// String names the start offset in messages.
func (s StartOffset) String() string {
	switch s.kind {
	case startCommitted:
		return fmt.Sprintf("committed offsets of group %q, else %s", s.group, s.fallback())
	case startLatest:
		return "latest"
	case startTime:
		return fmt.Sprintf("time %s", time.UnixMilli(s.ms).UTC().Format(time.RFC3339Nano))
	}
	return "earliest"
}

// listOffsetsTimestamp is the ListOffsets timestamp that resolves s.
func (s StartOffset) listOffsetsTimestamp() int64 {
	switch s.kind {
	case startLatest:
		return -1
	case startTime:
		return s.ms
	}
	return -2
}

type options struct {
	// source
	start     StartOffset
	bounded   bool
	onBad     func(*kgo.Record, error) error
	badTo     *weir.OutputTag[weir.BadRecord] // bad records to this side output
	skipBad   bool
	metrics   prometheus.Registerer
	poll      time.Duration
	clientOps []kgo.Opt
	discovery time.Duration // 0: off
	commitTo  string        // consumer group to commit offsets to; "": none
	now       func() time.Time

	// sink
	skipSerialize   bool
	prefix          string
	poolSize        int
	txnTimeout      time.Duration
	ckptInterval    time.Duration
	ckptTimeout     time.Duration
	maxRestartDelay time.Duration
	requestTimeout  time.Duration // how long a transaction end with an unknown outcome is resent
}

func defaults() options {
	return options{
		start:           Earliest(),
		poll:            10 * time.Millisecond,
		discovery:       10 * time.Second,
		now:             time.Now,
		prefix:          "weir",
		poolSize:        6,
		txnTimeout:      15 * time.Minute,
		ckptInterval:    time.Second,
		ckptTimeout:     10 * time.Minute,
		maxRestartDelay: time.Minute,
		requestTimeout:  requestTimeout,
	}
}

func apply(opts []Option) options {
	o := defaults()
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	return o
}

// WithStartOffset sets where a source starts on a fresh start (default Earliest).
// The offset is resolved once, when the source first opens, and kept in
// the checkpoint: a restore never resolves it again.
func WithStartOffset(s StartOffset) Option { return Option{func(o *options) { o.start = s }} }

// WithPartitionDiscoveryInterval sets how often an unbounded source asks the
// broker how many partitions its topic has (default 10 s; 0 turns
// discovery off; Flink's partition.discovery.interval.ms). The Metadata
// request runs in the background, never in Read. A partition found this
// way is read by the subtask that owns it from its earliest offset, so the
// records written to it before it was discovered are read too, whatever
// WithStartOffset says. A bounded source reads the partitions it found at open.
func WithPartitionDiscoveryInterval(d time.Duration) Option {
	return Option{func(o *options) { o.discovery = max(d, 0) }}
}

// withClock replaces the clock that paces partition discovery (tests).
func withClock(now func() time.Time) Option { return Option{func(o *options) { o.now = now }} }

// withRequestTimeout bounds how long the sink resends a transaction end
// whose outcome is unknown (tests; default requestTimeout).
func withRequestTimeout(d time.Duration) Option {
	return Option{func(o *options) { o.requestTimeout = d }}
}

// WithCommitOffsetsToGroup makes the source commit, when a checkpoint
// completes, the offsets that checkpoint holds to consumer group group, so
// that lag monitors see the job's progress. It is for monitoring only: a
// restore reads its offsets from the checkpoint, never from the group;
// commits run in the background and a failed one is logged, not fatal. The
// commits are standalone (no group membership): use a group no consumer
// joins.
func WithCommitOffsetsToGroup(group string) Option {
	return Option{func(o *options) { o.commitTo = group }}
}

// WithBounded makes a source stop (io.EOF) once it has read every partition up
// to the last stable offset it saw when it opened. Without it the source
// runs until the job is cancelled.
func WithBounded() Option { return Option{func(o *options) { o.bounded = true }} }

// WithDeserializeErrorHandler decides what happens to a record the deserializer
// rejects: f returns nil to skip it (after sending it to a dead-letter
// output of its own), or an error to fail the job. Without this option a
// bad record fails the job for good, naming its partition and offset. f
// runs on the task goroutine, and again for the same record after a
// restore replays it: a dead-letter output is at-least-once.
func WithDeserializeErrorHandler(f func(rec *kgo.Record, err error) error) Option {
	return Option{func(o *options) { o.onBad = f }}
}

// WithClientOptions adds franz-go options (TLS, SASL, timeouts) to every client
// the connector creates. Options the connector sets itself (seed brokers,
// transactional id, isolation level, consumed partitions) are overridden.
func WithClientOptions(opts ...kgo.Opt) Option {
	return Option{func(o *options) { o.clientOps = append(o.clientOps, opts...) }}
}

// WithTransactionalIDPrefix sets the first part of the sink's transactional
// ids, "<prefix>-<uid>-<subtask>-<k>" (default "weir"). Two jobs writing
// with the same prefix and operator uid fence each other: give each job its
// own prefix.
func WithTransactionalIDPrefix(p string) Option { return Option{func(o *options) { o.prefix = p }} }

// WithPoolSize sets how many transactional ids each sink subtask cycles
// through (default 6). One transaction is open, up to one per
// not-yet-completed checkpoint awaits its commit, and a committed one's id
// rests until a newer checkpoint completes, so that restoring the same
// checkpoint twice finds it untouched; 4 suffice with one checkpoint at a
// time.
func WithPoolSize(n int) Option { return Option{func(o *options) { o.poolSize = n }} }

// WithTransactionTimeout sets the sink's transaction timeout, the producers'
// transaction.timeout.ms (default 15 min, the broker's default
// transaction.max.timeout.ms; franz-go's own default is 40 s). The broker
// refuses a timeout above its transaction.max.timeout.ms, and aborts a
// transaction open longer than the timeout: if that happens to a
// pre-committed one, its commit fails the job as DATA LOSS. A pre-committed
// transaction must outlive its checkpoint and any restart before its
// commit: the sink refuses to open unless the timeout exceeds the interval,
// timeout and restart delay given by WithCheckpointing.
func WithTransactionTimeout(d time.Duration) Option {
	return Option{func(o *options) { o.txnTimeout = d }}
}

// WithCheckpointing tells the exactly-once sink the job's checkpoint interval,
// checkpoint timeout and longest restart delay (defaults 1 s, 10 min,
// 1 min, weir's defaults), which the sink's context does not expose. The
// sink checks at Open that its transaction timeout exceeds their sum: a
// transaction the broker times out before its commit is lost output.
func WithCheckpointing(interval, timeout, maxRestartDelay time.Duration) Option {
	return Option{func(o *options) {
		o.ckptInterval, o.ckptTimeout, o.maxRestartDelay = interval, timeout, maxRestartDelay
	}}
}

// validateSink checks the sink options.
func (o options) validateSink() error {
	if o.poolSize < 2 {
		return fmt.Errorf("kafka sink: pool size %d: want at least 2 transactional ids per subtask (6 is the default)", o.poolSize)
	}
	if o.prefix == "" {
		return fmt.Errorf("kafka sink: empty transactional id prefix: set kafka.WithTransactionalIDPrefix")
	}
	need := o.ckptInterval + o.ckptTimeout + o.maxRestartDelay
	if o.txnTimeout <= need {
		return fmt.Errorf("kafka sink: transaction timeout %v does not exceed checkpoint interval %v + checkpoint timeout %v + restart delay %v = %v: the broker would abort pre-committed transactions before their commit; raise kafka.WithTransactionTimeout (and the broker's transaction.max.timeout.ms) or lower the checkpoint timeout", o.txnTimeout, o.ckptInterval, o.ckptTimeout, o.maxRestartDelay, need)
	}
	return nil
}

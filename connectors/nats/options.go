package nats

import (
	"fmt"
	"log/slog"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
)

// Option configures a source or a sink. Options that do not apply to the
// connector they are given to are ignored.
type Option struct {
	apply func(*options)
}

type options struct {
	connOpts []natsgo.Option

	// source
	subjects  []string // subject filters, one split each; nil: the whole stream
	poll      time.Duration
	bounded   bool
	onBad     func(*Msg, error) error
	skipBad   bool
	badTo     *weir.OutputTag[weir.BadRecord] // bad records to this side output
	metrics   prometheus.Registerer
	startSeq  uint64 // fresh start: first sequence to read (0: the stream's first)
	lagPeriod time.Duration

	// sink
	skipSerialize   bool
	subject         string // default subject of published messages
	ckptInterval    time.Duration
	ckptTimeout     time.Duration
	maxRestartDelay time.Duration
	maxBuffered     int64
	spillBytes      int64
	batchSize       int
	atomic          atomicMode
	pubTimeout      time.Duration
}

// atomicMode says whether the exactly-once sink commits with atomic batch
// publishes.
type atomicMode int8

const (
	atomicAuto atomicMode = iota // when the stream allows it
	atomicOff
)

func apply(opts []Option) options {
	o := options{
		poll:            100 * time.Millisecond,
		lagPeriod:       time.Second,
		ckptInterval:    time.Second,
		ckptTimeout:     10 * time.Minute,
		maxRestartDelay: time.Minute,
		maxBuffered:     64 << 20,
		spillBytes:      4 << 20,
		batchSize:       1000,
		pubTimeout:      10 * time.Second,
	}
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	return o
}

// WithConnectOptions adds options of the nats.go client to every
// connection the connector opens (credentials, TLS, names). The connector
// sets its own reconnect behaviour first, so these may override it.
func WithConnectOptions(opts ...natsgo.Option) Option {
	return Option{func(o *options) { o.connOpts = append(o.connOpts, opts...) }}
}

// WithSubjects makes the source read only messages whose subject matches
// one of filters, each filter a split with its own position (default: the
// whole stream as one split). Filters should not overlap: a message
// matching two is read by both.
func WithSubjects(filters ...string) Option {
	return Option{func(o *options) { o.subjects = append([]string(nil), filters...) }}
}

// WithStartSequence makes a fresh start (no checkpoint) read from stream
// sequence seq rather than from the stream's first message. A restore
// always continues after the checkpoint's sequence.
func WithStartSequence(seq uint64) Option {
	return Option{func(o *options) { o.startSeq = seq }}
}

// WithPollInterval bounds how long a read waits for messages while the
// stream is quiet (default 100 ms), so that barriers and timers are not
// held up.
func WithPollInterval(d time.Duration) Option {
	return Option{func(o *options) { o.poll = d }}
}

// WithBounded makes the source stop at the last message each split had
// when the source opened: for batch jobs and tests.
func WithBounded() Option { return Option{func(o *options) { o.bounded = true }} }

// WithDeserializeErrorHandler hands messages the deserializer rejects to h
// instead of failing the job; an error from h fails the task.
func WithDeserializeErrorHandler(h func(m *Msg, err error) error) Option {
	return Option{func(o *options) { o.onBad = h }}
}

// WithBadRecordsTo sends messages the deserializer rejects to the
// source's side output tag, as weir.BadRecord values (payload, stream,
// subject, sequence, error text), instead of failing the job. Read them
// with weir.SideOutput(stream, tag) and sink or process them. They are
// exactly once like the main output: a bad message goes out in the same
// step as the sequence that passes it, so a restore never emits it
// again. The source refuses to open when the job does not read tag.
func WithBadRecordsTo(tag weir.OutputTag[weir.BadRecord]) Option {
	return Option{func(o *options) { o.badTo = &tag }}
}

// WithSkipBadRecords skips messages the deserializer rejects: each is
// logged at WARN level (stream, subject, sequence, error) and counted in
// the source's SkippedRecords and the weir_nats_source_skipped_records
// metric. Without it (and without WithDeserializeErrorHandler or
// WithBadRecordsTo) a bad message fails the job.
func WithSkipBadRecords() Option { return Option{func(o *options) { o.skipBad = true }} }

// WithMetrics registers the connector's metrics (the source's consumer lag
// and skipped records, the sinks' skipped records) in reg. Without it nothing is registered.
func WithMetrics(reg prometheus.Registerer) Option {
	return Option{func(o *options) { o.metrics = reg }}
}

// WithSubject sets the subject the sinks publish to when the serializer
// leaves a message's Subject empty (default: the stream's subject, when it
// has exactly one without wildcards).
func WithSubject(subject string) Option {
	return Option{func(o *options) { o.subject = subject }}
}

// WithCheckpointing tells the exactly-once sink the job's checkpoint
// interval, checkpoint timeout and longest restart delay (defaults 1 s,
// 10 min, 1 min, weir's defaults), which the sink's context does not
// expose. A commit published once may be published again after a failure
// until a restore from a newer checkpoint: up to their sum later. The sink
// refuses to open when the stream's duplicate window is shorter, since the
// server would then store the repeated messages a second time.
func WithCheckpointing(interval, timeout, maxRestartDelay time.Duration) Option {
	return Option{func(o *options) {
		o.ckptInterval, o.ckptTimeout, o.maxRestartDelay = interval, timeout, maxRestartDelay
	}}
}

// WithMaxBufferedBytes bounds the bytes (subjects, headers and payloads)
// an exactly-once sink subtask holds in memory for checkpoints not yet
// committed (default 64 MiB): the open transaction's messages, and those
// of pre-committed transactions not spilled (WithSpillBytes). A subtask
// that would hold more fails the job for good, naming the bound: raise
// it, or checkpoint more often.
func WithMaxBufferedBytes(n int64) Option {
	return Option{func(o *options) { o.maxBuffered = n }}
}

// WithSpillBytes sets the size (subjects, headers and payloads) above
// which the exactly-once sink spills a checkpoint's messages at
// pre-commit into a blob in the job's checkpoint storage rather than
// keep them in memory and in the checkpoint's metadata (default 4 MiB; 0
// or less: never). The commit reads them back from the blob.
func WithSpillBytes(n int64) Option {
	return Option{func(o *options) { o.spillBytes = n }}
}

// WithBatchSize sets how many messages one atomic batch publish carries
// (default 1000, nats-server's default max_batch_size). A commit with more
// messages is published as several atomic batches.
func WithBatchSize(n int) Option { return Option{func(o *options) { o.batchSize = n }} }

// WithoutAtomicBatches makes the exactly-once sink publish message by
// message (each with its Nats-Msg-Id) even where the stream allows atomic
// batches.
func WithoutAtomicBatches() Option { return Option{func(o *options) { o.atomic = atomicOff }} }

// WithPublishTimeout bounds the wait for the server's acknowledgements of
// one publish or batch (default 10 s).
func WithPublishTimeout(d time.Duration) Option {
	return Option{func(o *options) { o.pubTimeout = d }}
}

// retryWindow is how long after a commit's first publish it may be
// published again.
func (o options) retryWindow() time.Duration {
	return o.ckptInterval + o.ckptTimeout + o.maxRestartDelay
}

// validateSink checks the sink options.
func (o options) validateSink() error {
	if o.batchSize < 1 {
		return fmt.Errorf("batch size %d: want at least 1 (nats.WithBatchSize)", o.batchSize)
	}
	if o.maxBuffered < 1 {
		return fmt.Errorf("max buffered bytes %d: want at least 1 (nats.WithMaxBufferedBytes)", o.maxBuffered)
	}
	return nil
}

// logger returns l, or the default logger when l is nil: a failing job is
// never silent.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// ExactlyOnce returns a factory of exactly-once NATS JetStream sinks for
// weir.SinkToTransactional. serialize fills a message (Data, Header, and
// Subject unless WithSubject or the stream's single subject should be
// used) for each value; the message is the sink's to keep. Its error
// fails the job for good, naming the sink, the stream and the value's
// index in its batch, unless WithSkipSerializeErrors skips and counts
// such values.
//
// A subtask keeps the messages of each checkpoint (in memory and in the
// checkpoint, at most WithMaxBufferedBytes in memory; a checkpoint's
// messages beyond WithSpillBytes in a blob in checkpoint storage instead)
// and publishes them when the
// checkpoint completes, each with a Nats-Msg-Id made of the job, the
// operator, the subtask, the transaction and the message's index; a
// restore publishes a completed checkpoint's messages again with the same
// ids, and the server drops those it stored already.
func ExactlyOnce[T any](url, stream string, serialize func(T, *natsgo.Msg) error, opts ...Option) func() weir.TwoPhaseCommitSink[T, *Txn] {
	o := apply(opts)
	return func() weir.TwoPhaseCommitSink[T, *Txn] {
		return &eoSink[T]{url: url, stream: stream, serialize: serialize, o: o}
	}
}

type eoSink[T any] struct {
	url       string
	stream    string
	serialize func(T, *natsgo.Msg) error
	o         options

	uid      string
	prefix   string // "<job>/<uid>/<subtask>/<run>"
	n        int    // transactions begun
	log      *slog.Logger
	nc       *natsgo.Conn
	pub      *publisher
	subject  string // default subject
	buffered int64  // bytes in memory of transactions not yet committed or aborted
	blobs    weir.TransactionBlobs
	spilled  int  // transactions spilled, for tests
	noSpill  bool // Create said there is no storage for blobs; logged
	// restoredSpilled counts restored spilled transactions the restore
	// commits (or aborts) from their blobs, for tests.
	restoredSpilled int
	bad             *badrecords.Serialize
}

// SetTransactionBlobs makes the sink a weir.BlobSink: large transactions
// are spilled to checkpoint storage at pre-commit (WithSpillBytes).
func (s *eoSink[T]) SetTransactionBlobs(b weir.TransactionBlobs) { s.blobs = b }

func (s *eoSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext, restored []*Txn) error {
	return s.open(ctx, rc.JobName(), rc.UID(), rc.Subtask(), rc.Logger(), restored)
}

// open is Open without the engine's RuntimeContext, for tests.
func (s *eoSink[T]) open(ctx context.Context, job, uid string, subtask int, log *slog.Logger, restored []*Txn) error {
	s.uid, s.log = uid, logger(log)
	if err := s.o.validateSink(); err != nil {
		return weir.Unrecoverable(fmt.Errorf("nats sink %q: %w", uid, err))
	}
	bad, err := newSerializeErrors(s.o, uid, s.stream, subtask, s.log)
	if err != nil {
		return err
	}
	s.bad = bad
	run := make([]byte, 6)
	if _, err := rand.Read(run); err != nil {
		return fmt.Errorf("nats sink %q: random run id: %w", uid, err)
	}
	s.prefix = fmt.Sprintf("%s/%s/%d/%s", job, uid, subtask, hex.EncodeToString(run))
	nc, js, err := connect(ctx, s.url, "weir sink "+uid, s.o)
	if err != nil {
		return fmt.Errorf("nats sink %q: %w", uid, err)
	}
	_, info, err := streamInfo(ctx, js, s.stream)
	if err == nil {
		err = checkDuplicateWindow(s.stream, info.Config.Duplicates, s.o)
	}
	if err != nil {
		nc.Close() // the operator does not Close a sink whose Open failed
		return fmt.Errorf("nats sink %q: %w", uid, err)
	}
	s.nc = nc
	s.subject = defaultSubject(s.o.subject, info.Config.Subjects)
	atomic := s.o.atomic == atomicAuto && info.Config.AllowAtomicPublish
	s.pub = &publisher{nc: nc, js: js, stream: s.stream, atomic: atomic, batch: s.o.batchSize, timeout: s.o.pubTimeout}
	if !atomic {
		s.log.Info("nats sink: stream does not allow atomic batch publish; committing message by message with message ids (a crash mid-commit shows part of a checkpoint until the retry)", "sink", uid, "stream", s.stream)
	}
	for _, t := range restored {
		if t.inMemory() {
			s.buffered += t.Bytes
		}
		if t != nil && !t.Committed && t.Blob != "" {
			s.restoredSpilled++
		}
	}
	return nil
}

// defaultSubject is the subject of messages the serializer leaves
// without one: the option, or the stream's only subject if it has no
// wildcard.
func defaultSubject(opt string, subjects []string) string {
	if opt != "" {
		return opt
	}
	if len(subjects) == 1 && !strings.ContainsAny(subjects[0], "*>") {
		return subjects[0]
	}
	return ""
}

func (s *eoSink[T]) Begin(context.Context) (*Txn, error) {
	s.n++
	return &Txn{ID: fmt.Sprintf("%s-%d", s.prefix, s.n)}, nil
}

func (s *eoSink[T]) Write(_ context.Context, txn *Txn, batch []T) error {
	for i, v := range batch {
		m := natsgo.Msg{}
		if err := s.serialize(v, &m); err != nil {
			if err := s.bad.Failed(i, len(batch), err); err != nil {
				return err
			}
			continue
		}
		r := Record{Subject: m.Subject, Header: m.Header, Data: m.Data}
		if r.Subject == "" {
			r.Subject = s.subject
		}
		if r.Subject == "" {
			return weir.Unrecoverable(fmt.Errorf("nats sink %q: stream %q: the serializer left a message without a subject and the stream has no single plain subject: set msg.Subject in the serializer or pass nats.WithSubject: %w", s.uid, s.stream, errNoSubject))
		}
		n := r.size()
		if s.buffered+n > s.o.maxBuffered {
			return weir.Unrecoverable(fmt.Errorf("nats sink %q: stream %q: the messages in memory of checkpoints not yet committed (the open one, and those not spilled to checkpoint storage) would exceed %d bytes (nats.WithMaxBufferedBytes), in transaction %s: raise the bound, lower nats.WithSpillBytes, or checkpoint more often (execution.checkpointing.interval) so that fewer messages wait for their commit", s.uid, s.stream, s.o.maxBuffered, txn))
		}
		s.buffered += n
		txn.Bytes += n
		txn.Msgs = append(txn.Msgs, r)
	}
	txn.Count = len(txn.Msgs)
	return nil
}

// PreCommit leaves the messages in the handle, which the operator stores
// in the checkpoint; a transaction of more than WithSpillBytes is spilled
// into a blob in checkpoint storage instead (spill.go).
func (s *eoSink[T]) PreCommit(ctx context.Context, txn *Txn) error {
	if s.blobs == nil || s.o.spillBytes <= 0 || txn.Bytes <= s.o.spillBytes || len(txn.Msgs) == 0 {
		return nil
	}
	return s.spill(ctx, txn)
}

// Commit publishes the transaction's messages with their ids; repeating
// it (a retry, a restore) stores nothing twice within the stream's
// duplicate window.
func (s *eoSink[T]) Commit(ctx context.Context, txn *Txn) error {
	if txn.Committed || len(txn.Msgs) == 0 && txn.Blob == "" {
		s.release(txn)
		return nil
	}
	if txn.Blob != "" {
		if err := s.commitBlob(ctx, txn); err != nil {
			return err
		}
		s.release(txn)
		return nil
	}
	msgs := make([]*natsgo.Msg, len(txn.Msgs))
	for i, r := range txn.Msgs {
		msgs[i] = txn.msg(i, r)
	}
	if err := s.pub.publish(ctx, msgs); err != nil {
		return fmt.Errorf("nats sink %q: commit %s: %w", s.uid, txn, err)
	}
	s.release(txn)
	return nil
}

// release forgets a finished transaction's messages.
func (s *eoSink[T]) release(txn *Txn) {
	if txn.inMemory() {
		s.buffered -= txn.Bytes
	}
	txn.Committed, txn.Msgs = true, nil
}

// Abort drops the messages; nothing of them was published. The sink
// cannot tell an aborted transaction that a newer, lost checkpoint had
// committed (see the package doc).
func (s *eoSink[T]) Abort(_ context.Context, txn *Txn) error {
	if txn.inMemory() {
		s.buffered -= txn.Bytes
	}
	txn.Msgs, txn.aborted = nil, true
	return nil
}

func (s *eoSink[T]) Close(context.Context) error {
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	return nil
}

// checkDuplicateWindow refuses a stream that forgets message ids sooner
// than a commit may be published again.
func checkDuplicateWindow(stream string, w time.Duration, o options) error {
	need := o.retryWindow()
	if w < need {
		return weir.Unrecoverable(fmt.Errorf("stream %q keeps message ids for duplicate detection for %v (its duplicate window), shorter than the %v after which a commit may be published again (checkpoint interval %v + checkpoint timeout %v + restart delay %v, nats.WithCheckpointing): repeated messages would be stored twice; raise the stream's duplicate window to at least %v (nats stream edit %s --dupe-window %v) or lower the checkpoint timeout and restart delay", stream, w, need, o.ckptInterval, o.ckptTimeout, o.maxRestartDelay, need, stream, need))
	}
	return nil
}

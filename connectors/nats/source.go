package nats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
)

// splitPosition is one element of the source's operator state: a split
// (a subject filter, "" for the whole stream) and the stream sequence of
// the next message to read, one past the last message read. It is union
// list state: a restore hands every subtask the elements of all, and each
// keeps those of the splits it owns.
type splitPosition struct {
	Filter string
	Next   uint64
}

// positionsState names the source's union list state.
const positionsState = "nats-split-positions"

// Source returns a factory of NATS JetStream sources for weir.FromSource:
// the messages of stream (or of its WithSubjects filters), turned into T
// by deserialize, which must not keep the message's Data or Header.
//
// Split i (filter i, or the whole stream) is read by subtask i mod p; its
// position, the next stream sequence, lives in the checkpoint, so a
// restore continues right after the last message the checkpoint covers,
// at any parallelism.
func Source[T any](url, stream string, deserialize func(*Msg) (T, error), opts ...Option) func() weir.Source[T] {
	o := apply(opts)
	return func() weir.Source[T] {
		return &source[T]{url: url, stream: stream, deserialize: deserialize, o: o}
	}
}

// split is what a subtask knows of one split it reads.
type split struct {
	filter string
	id     string // split id for ReadSplit: the filter, or the stream name
	next   uint64
	end    uint64 // bounded mode: the last sequence to read; 0: empty
	done   bool
	r      splitReader
}

type source[T any] struct {
	url         string
	stream      string
	deserialize func(*Msg) (T, error)
	o           options

	uid       string
	subtask   int
	log       *slog.Logger
	nc        *natsgo.Conn
	js        jetstream.JetStream
	s         jetstream.Stream
	workQueue bool
	interest  bool
	state     *weir.OperatorList[splitPosition]
	splits    []*split
	cur       int // the split ReadSplit reads next
	remaining int // bounded mode: splits not done
	snaps     []snapshot
	metrics   sourceMetrics
	skipped   int64
	rc        *weir.RuntimeContext // for bad records to a side output
	lastSeq   uint64               // the stream's last sequence, refreshed for the lag
	lastInfo  time.Time
}

// snapshot is the positions a checkpoint took, kept until it completes,
// when a work-queue stream's messages below them are removed, or, on an
// interest stream, the messages its acks cover are acknowledged.
type snapshot struct {
	id   int64
	pos  []splitPosition
	acks []jetstream.Msg
}

// DeclareStates lists the source's state: the split positions, union
// list state.
func (s *source[T]) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{weir.UnionListStateOf[splitPosition](positionsState)}
}

func (s *source[T]) Open(ctx context.Context, rc *weir.RuntimeContext) (err error) {
	s.uid, s.subtask, s.log = rc.UID(), rc.Subtask(), logger(rc.Logger())
	st, err := weir.GetUnionListState[splitPosition](rc, positionsState)
	if err != nil {
		return err
	}
	s.state = st
	s.rc = rc
	if s.o.badTo != nil && !weir.SideOutputConnected(rc, *s.o.badTo) {
		return weir.Unrecoverable(fmt.Errorf("nats source %q: bad messages go to side output %q, which the job does not read: read it with weir.SideOutput(stream, tag) and sink it", s.uid, s.o.badTo.ID()))
	}
	if s.metrics, err = newSourceMetrics(s.o.metrics); err != nil {
		return fmt.Errorf("nats source %q: register metrics: %w", s.uid, err)
	}
	s.nc, s.js, err = connect(ctx, s.url, "weir source "+s.uid, s.o)
	if err != nil {
		return fmt.Errorf("nats source %q: %w", s.uid, err)
	}
	defer func() {
		if err != nil {
			s.Close(ctx)
		}
	}()
	str, info, err := streamInfo(ctx, s.js, s.stream)
	if err != nil {
		return fmt.Errorf("nats source %q: %w", s.uid, err)
	}
	s.s, s.lastSeq = str, info.State.LastSeq
	switch info.Config.Retention {
	case jetstream.WorkQueuePolicy:
		s.workQueue = true
	case jetstream.InterestPolicy:
		s.interest = true
	}
	restored := map[string]uint64{}
	for _, p := range st.Get() {
		restored[p.Filter] = max(restored[p.Filter], p.Next)
	}
	filters := s.o.subjects
	if len(filters) == 0 {
		filters = []string{""}
	}
	for i, f := range filters {
		if i%rc.Parallelism() != s.subtask {
			continue
		}
		next, ok := restored[f]
		if !ok {
			next = max(s.o.startSeq, 1)
		}
		sp := &split{filter: f, id: f, next: next}
		if f == "" {
			sp.id = s.stream
		}
		if ok {
			if err := s.checkGone(sp, info); err != nil {
				return err
			}
		}
		s.splits = append(s.splits, sp)
	}
	for _, sp := range s.splits {
		if s.o.bounded {
			if err := s.setEnd(ctx, sp); err != nil {
				return err
			}
			if sp.done {
				continue
			}
			s.remaining++
		}
		if err := s.openReader(ctx, sp); err != nil {
			return err
		}
	}
	return nil
}

// checkGone fails a restore whose next message was removed from the
// stream before the job read it (retention limits, a purge): never a
// silent jump. A split with a subject filter cannot tell removed
// messages of its own subjects from others', so it only warns.
func (s *source[T]) checkGone(sp *split, info *jetstream.StreamInfo) error {
	first := info.State.FirstSeq
	if s.workQueue || s.interest || info.State.Msgs == 0 || first <= sp.next {
		return nil
	}
	if sp.filter != "" {
		s.log.Warn("nats source: the stream's first message is past the checkpoint's position; messages of this split in between may have been removed before the job read them", "source", s.uid, "stream", s.stream, "split", sp.filter, "next", sp.next, "first", first)
		return nil
	}
	return weir.Unrecoverable(fmt.Errorf("nats source %q: stream %q no longer holds sequences %d to %d, which the checkpoint has not read (removed by the stream's limits or a purge): restore a newer checkpoint, or start the job afresh (nats.WithStartSequence) accepting the loss", s.uid, s.stream, sp.next, first-1))
}

// setEnd resolves a bounded split's last sequence.
func (s *source[T]) setEnd(ctx context.Context, sp *split) error {
	if sp.filter == "" {
		sp.end = s.lastSeq
	} else {
		m, err := s.s.GetLastMsgForSubject(ctx, sp.filter)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			sp.end = 0
		case err != nil:
			return fmt.Errorf("nats source %q: last message of stream %q on %q: %w", s.uid, s.stream, sp.filter, err)
		default:
			sp.end = m.Sequence
		}
	}
	sp.done = sp.next > sp.end
	return nil
}

// openReader starts reading a split at its position.
func (s *source[T]) openReader(ctx context.Context, sp *split) error {
	if s.workQueue {
		r := newDirectReader(s.s, s.stream, sp.filter, sp.next)
		r.lastSeq = func() uint64 { return s.lastSeq }
		sp.r = r
		return nil
	}
	if s.interest {
		r, err := newDurableReader(ctx, s.s, s.stream, durablePrefix(s.uid, sp.id), sp.filter, sp.next)
		if err != nil {
			return fmt.Errorf("nats source %q: %w", s.uid, err)
		}
		sp.r = r
		return nil
	}
	r, err := newOrderedReader(ctx, s.js, s.stream, sp.filter, sp.next)
	if err != nil {
		return fmt.Errorf("nats source %q: %w", s.uid, err)
	}
	sp.r = r
	return nil
}

func (s *source[T]) Read(ctx context.Context, dst []T, max int) ([]T, error) {
	dst, _, err := s.ReadSplit(ctx, dst, max)
	return dst, err
}

// Splits lists the splits the subtask reads and has not finished
// (weir.SplitReader): a filter, or the stream's name for the whole stream.
func (s *source[T]) Splits() []string {
	ids := make([]string, 0, len(s.splits))
	for _, sp := range s.splits {
		if !sp.done {
			ids = append(ids, sp.id)
		}
	}
	return ids
}

// ReadSplit reads one split's messages per call (weir.SplitReader), the
// splits in turn, so that weir.FromSourceWithWatermarks generates
// watermarks per split.
func (s *source[T]) ReadSplit(ctx context.Context, dst []T, max int) ([]T, weir.Split, error) {
	if s.o.bounded && s.remaining == 0 {
		return dst, weir.Split{}, io.EOF
	}
	s.refreshLastSeq(ctx)
	active := 0
	for _, sp := range s.splits {
		if !sp.done {
			active++
		}
	}
	if active == 0 {
		// Nothing to read (more subtasks than splits): wait a poll.
		t := time.NewTimer(s.o.poll)
		defer t.Stop()
		select {
		case <-t.C:
			return dst, weir.Split{}, nil
		case <-ctx.Done():
			return dst, weir.Split{}, ctx.Err()
		}
	}
	var sp *split
	for sp == nil || sp.done {
		sp = s.splits[s.cur%len(s.splits)]
		s.cur++
	}
	// A quiet split waits its share of the poll interval, so a read with
	// several splits still returns within about one interval.
	wait := s.o.poll / time.Duration(active)
	var ferr error
	pending, err := sp.r.read(ctx, max, wait, func(m *Msg) error {
		if sp.done || m.Sequence < sp.next {
			return nil // past a bounded end, or already read
		}
		if s.o.bounded && m.Sequence > sp.end {
			s.finish(sp)
			return nil
		}
		sp.next = m.Sequence + 1
		dst, ferr = s.record(dst, m)
		if s.o.bounded && sp.next > sp.end {
			s.finish(sp)
		}
		return ferr
	})
	if err != nil && !errors.Is(err, ferr) {
		err = fmt.Errorf("nats source %q: %w", s.uid, err)
	}
	if pending >= 0 {
		s.metrics.lag.WithLabelValues(s.stream, sp.id, s.uid, strconv.Itoa(s.subtask)).Set(float64(pending))
		// The same figure on the JobManager, per split: the autoscaler
		// sums a subtask's splits as its lag.
		s.rc.SetGauge(weir.PendingRecordsGauge, float64(pending), "split", sp.id)
	}
	return dst, weir.Split{ID: sp.id, Finished: sp.done}, err
}

// refreshLastSeq learns the stream's last sequence now and then, for the
// lag of splits read by direct get.
func (s *source[T]) refreshLastSeq(ctx context.Context) {
	if !s.workQueue || time.Since(s.lastInfo) < s.o.lagPeriod {
		return
	}
	s.lastInfo = time.Now()
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if info, err := s.s.Info(ictx); err == nil {
		s.lastSeq = info.State.LastSeq
	}
}

// record deserializes one message.
func (s *source[T]) record(dst []T, m *Msg) ([]T, error) {
	v, err := s.deserialize(m)
	if err == nil {
		return append(dst, v), nil
	}
	switch {
	case s.o.onBad != nil:
		if herr := s.o.onBad(m, err); herr != nil {
			return dst, fmt.Errorf("nats source %q: message at %s: %w", s.uid, m.where(), herr)
		}
	case s.o.badTo != nil:
		weir.CollectSourceSide(s.rc, *s.o.badTo, weir.BadRecord{
			Source: s.uid, Subtask: s.subtask,
			Topic: m.Stream, Offset: int64(m.Sequence), Subject: m.Subject,
			Value: append([]byte{}, m.Data...), Time: m.Time,
			Err: err.Error(),
		})
	case s.o.skipBad:
		s.skipped++
		s.metrics.skipped.WithLabelValues(s.stream, s.uid, strconv.Itoa(s.subtask)).Inc()
		s.log.Warn("nats source: skipped a message the deserializer rejected", "source", s.uid, "stream", m.Stream, "subject", m.Subject, "sequence", m.Sequence, "err", err, "skipped", s.skipped)
	default:
		// A restart would meet the same message: fail for good.
		return dst, weir.Unrecoverable(fmt.Errorf("nats source %q: deserialize %s: %w (pass nats.WithBadRecordsTo to route bad messages to a side output, nats.WithSkipBadRecords to skip and count them, or nats.WithDeserializeErrorHandler to handle them)", s.uid, m.where(), err))
	}
	return dst, nil
}

// SkippedRecords counts the messages this subtask skipped
// (WithSkipBadRecords) since it opened.
func (s *source[T]) SkippedRecords() int64 { return s.skipped }

// finish marks a bounded split as read to its end.
func (s *source[T]) finish(sp *split) {
	if !sp.done {
		sp.done = true
		s.remaining--
	}
}

// SnapshotState stores the positions of the splits this subtask owns.
func (s *source[T]) SnapshotState(id int64) error {
	pos := make([]splitPosition, 0, len(s.splits))
	for _, sp := range s.splits {
		pos = append(pos, splitPosition{Filter: sp.filter, Next: sp.next})
	}
	s.state.Update(pos)
	switch {
	case s.workQueue:
		s.snaps = append(s.snaps, snapshot{id: id, pos: pos})
	case s.interest:
		var acks []jetstream.Msg
		for _, sp := range s.splits {
			if d, ok := sp.r.(*durableReader); ok && d.ackable() != nil {
				acks = append(acks, d.ackable())
			}
		}
		s.snaps = append(s.snaps, snapshot{id: id, acks: acks})
	}
	return nil
}

// NotifyCheckpointComplete removes from a work-queue stream the messages
// checkpoint id covers, or acknowledges them on an interest stream
// (weir.CheckpointListener): only now can no restore need them again. A
// failure is logged; the next completed checkpoint covers the same
// messages and tries again.
func (s *source[T]) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	var done *snapshot
	for i := range s.snaps {
		if s.snaps[i].id <= id {
			done = &s.snaps[i]
		}
	}
	if done == nil {
		return nil
	}
	pos, acks := done.pos, done.acks
	s.snaps = dropThrough(s.snaps, id)
	for _, m := range acks {
		// Ack policy all: this covers every message of the split before
		// it. Fire and forget; a lost ack is covered by the next one.
		if err := m.Ack(); err != nil {
			s.log.Warn("nats source: could not acknowledge the messages a completed checkpoint covers; the next checkpoint tries again", "source", s.uid, "stream", s.stream, "checkpoint", id, "err", err)
		}
	}
	for _, p := range pos {
		if p.Next <= 1 {
			continue
		}
		popts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSequence(p.Next)}
		if p.Filter != "" {
			popts = append(popts, jetstream.WithPurgeSubject(p.Filter))
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.s.Purge(pctx, popts...)
		cancel()
		if err != nil {
			s.log.Warn("nats source: could not remove the messages a completed checkpoint covers from the work-queue stream; the next checkpoint tries again", "source", s.uid, "stream", s.stream, "split", p.Filter, "below", p.Next, "checkpoint", id, "err", err)
		}
	}
	return nil
}

// dropThrough removes the snapshots up to and including id.
func dropThrough(snaps []snapshot, id int64) []snapshot {
	i := 0
	for i < len(snaps) && snaps[i].id <= id {
		i++
	}
	return append(snaps[:0], snaps[i:]...)
}

func (s *source[T]) Close(context.Context) error {
	for _, sp := range s.splits {
		if sp.r != nil {
			sp.r.close()
			sp.r = nil
		}
		s.metrics.lag.DeleteLabelValues(s.stream, sp.id, s.uid, strconv.Itoa(s.subtask))
	}
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	return nil
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

// partitionOffset is one element of a source subtask's operator list state:
// a partition it reads and the offset of the next record to read. There is
// one element per partition, so when the parallelism changes the runtime
// deals whole partitions out to the new subtasks and each partition's
// offset travels with it.
type partitionOffset struct {
	Partition int32
	Next      int64
}

// offsetsState names the source's operator list state.
const offsetsState = "kafka-partition-offsets"

// Source returns a factory of Kafka sources for weir.FromSource: records of
// topic, read with read_committed isolation and turned into T by
// deserialize (which must not keep the record).
//
// On a fresh start subtask s of p reads the partitions q with q mod p == s,
// from the StartAt offset resolved once at open. Its checkpoint holds the
// next offset of every partition it reads, and a restore resumes exactly
// there, whatever consumer group offsets say: the checkpoint is the only
// truth. After a restore at another parallelism each subtask reads the
// partitions whose offsets the runtime handed it.
func Source[T any](brokers []string, topic string, deserialize func(*kgo.Record) (T, error), opts ...Option) func() weir.Source[T] {
	o := apply(opts)
	return func() weir.Source[T] {
		return &source[T]{brokers: brokers, topic: topic, deserialize: deserialize, o: o}
	}
}

// partState is what a subtask knows of one partition it reads.
type partState struct {
	next int64
	end  int64 // bounded mode: stop at this offset
	done bool
}

type source[T any] struct {
	brokers     []string
	topic       string
	deserialize func(*kgo.Record) (T, error)
	o           options

	uid       string
	cl        *kgo.Client
	state     *weir.OperatorList[partitionOffset]
	parts     map[int32]*partState
	order     []int32 // parts' keys, sorted, for a stable snapshot
	remaining int     // bounded mode: partitions not done
	idle      *time.Timer
}

func (s *source[T]) Open(ctx *weir.Context) error {
	s.uid = ctx.UID()
	st, err := weir.GetOperatorListState[partitionOffset](ctx, offsetsState)
	if err != nil {
		return err
	}
	s.state = st
	admin, err := kgo.NewClient(append(slices.Clone(s.o.clientOps), kgo.SeedBrokers(s.brokers...))...)
	if err != nil {
		return fmt.Errorf("kafka source %q: client: %w", s.uid, err)
	}
	defer admin.Close()
	bg := context.Background()
	n, err := partitionCount(bg, admin, s.topic)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.uid, err)
	}
	s.parts = map[int32]*partState{}
	if ctx.Restored() {
		// The checkpoint is the truth: read exactly the partitions whose
		// offsets this subtask was handed, each from its offset. Every
		// partition the job ever read has its element in the checkpoint,
		// so at any parallelism each lands on exactly one subtask.
		for _, e := range st.Get() {
			if _, dup := s.parts[e.Partition]; dup {
				return weir.Unrecoverable(fmt.Errorf("kafka source %q subtask %d: the checkpoint holds partition %d twice: it was not written by this source", s.uid, ctx.Subtask(), e.Partition))
			}
			if e.Partition >= n {
				return weir.Unrecoverable(fmt.Errorf("kafka source %q: the checkpoint holds partition %d of topic %q, which has %d: restore into a topic with the same partitions", s.uid, e.Partition, s.topic, n))
			}
			s.parts[e.Partition] = &partState{next: e.Next}
		}
	} else {
		var mine []int32
		for p := int32(0); p < n; p++ {
			if int(p)%ctx.Parallelism() == ctx.Subtask() {
				mine = append(mine, p)
			}
		}
		start, err := listOffsets(bg, admin, s.topic, mine, s.o.start.listOffsetsTimestamp())
		if err != nil {
			return fmt.Errorf("kafka source %q: resolve start offset %s: %w", s.uid, s.o.start, err)
		}
		for _, p := range mine {
			s.parts[p] = &partState{next: start[p]}
		}
	}
	for p := range s.parts {
		s.order = append(s.order, p)
	}
	slices.Sort(s.order)
	if s.o.bounded {
		ends, err := listOffsets(bg, admin, s.topic, s.order, -1)
		if err != nil {
			return fmt.Errorf("kafka source %q: end offsets: %w", s.uid, err)
		}
		for p, ps := range s.parts {
			ps.end = ends[p]
			ps.done = ps.next >= ps.end
			if !ps.done {
				s.remaining++
			}
		}
	}
	consume := map[int32]kgo.Offset{}
	for p, ps := range s.parts {
		if !ps.done {
			consume[p] = kgo.NewOffset().At(ps.next)
		}
	}
	if len(consume) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(s.o.clientOps),
		kgo.SeedBrokers(s.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: consume}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Control records (transaction markers) occupy offsets too; seeing
		// them lets the source know its exact position, and when a
		// bounded read reached its end.
		kgo.KeepControlRecords(),
		// An offset that is no longer in the log is an error, never a
		// silent jump elsewhere.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)...)
	if err != nil {
		return fmt.Errorf("kafka source %q: consumer: %w", s.uid, err)
	}
	s.cl = cl
	return nil
}

func (s *source[T]) Read(dst []T, max int) ([]T, error) {
	if s.o.bounded && s.remaining == 0 {
		return dst, io.EOF
	}
	if s.cl == nil {
		// No partition to read, and unbounded: wait a little so the task
		// loop does not spin.
		if s.idle == nil {
			s.idle = time.NewTimer(s.o.poll)
		} else {
			s.idle.Reset(s.o.poll)
		}
		<-s.idle.C
		return dst, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.poll)
	fetches := s.cl.PollRecords(ctx, max)
	cancel()
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		return dst, fmt.Errorf("kafka source %q: fetch topic %q partition %d: %w", s.uid, fe.Topic, fe.Partition, fe.Err)
	}
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		dst, err = s.record(dst, r)
	})
	return dst, err
}

// record handles one fetched record: it advances the partition's position
// and emits the record unless it is a control record.
func (s *source[T]) record(dst []T, r *kgo.Record) ([]T, error) {
	ps := s.parts[r.Partition]
	if ps == nil || ps.done || r.Offset < ps.next {
		return dst, nil // not ours, past a bounded end, or already read
	}
	if s.o.bounded && r.Offset >= ps.end {
		s.finish(r.Partition, ps)
		return dst, nil
	}
	ps.next = r.Offset + 1
	defer func() {
		if s.o.bounded && ps.next >= ps.end {
			s.finish(r.Partition, ps)
		}
	}()
	if r.Attrs.IsControl() {
		return dst, nil
	}
	v, err := s.deserialize(r)
	if err == nil {
		return append(dst, v), nil
	}
	if s.o.onBad == nil {
		return dst, weir.Unrecoverable(fmt.Errorf("kafka source %q: deserialize topic %q partition %d offset %d: %w (pass kafka.OnDeserializeError to send bad records elsewhere)", s.uid, s.topic, r.Partition, r.Offset, err))
	}
	if herr := s.o.onBad(r, err); herr != nil {
		return dst, fmt.Errorf("kafka source %q: record at topic %q partition %d offset %d: %w", s.uid, s.topic, r.Partition, r.Offset, herr)
	}
	return dst, nil
}

// finish marks a bounded partition as read to its end and stops fetching it.
func (s *source[T]) finish(p int32, ps *partState) {
	if ps.done {
		return
	}
	ps.done = true
	s.remaining--
	s.cl.PauseFetchPartitions(map[string][]int32{s.topic: {p}})
}

func (s *source[T]) SnapshotState(int64) error {
	els := make([]partitionOffset, 0, len(s.order))
	for _, p := range s.order {
		els = append(els, partitionOffset{Partition: p, Next: s.parts[p].next})
	}
	s.state.Update(els)
	return nil
}

func (s *source[T]) Close() error {
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}

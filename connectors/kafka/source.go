package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

// partitionOffset is one element of the source's operator state: a
// partition and the offset of the next record to read. The state is union
// list state: a restore hands every subtask the elements of all, and each
// keeps those of the partitions it owns (q mod parallelism == subtask).
type partitionOffset struct {
	Partition int32
	Next      int64
}

// offsetsState names the source's operator list state: union list state
// under this name, and, in checkpoints taken before it was union state,
// round-robin list state, still read on a restore.
const offsetsState = "kafka-partition-offsets"

// Source returns a factory of Kafka sources for weir.FromSource: records of
// topic, read with read_committed isolation and turned into T by
// deserialize (which must not keep the record).
//
// Subtask s of p reads the partitions q with q mod p == s: on a fresh start
// from the WithStartOffset offset resolved once at open, after a restore from the
// offset the checkpoint holds, whatever consumer group offsets say (the
// checkpoint is the only truth), and from the earliest offset for a
// partition the checkpoint does not know or that discovery finds later.
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
	id   string // the partition as a split id (ReadSplit)
	// stable is the partition's last stable offset (read_committed: the
	// end a consumer can read to) as of its latest fetch; 0 until one.
	stable int64
}

type source[T any] struct {
	brokers     []string
	topic       string
	deserialize func(*kgo.Record) (T, error)
	o           options

	uid         string
	subtask     int
	parallelism int
	log         *slog.Logger
	admin       *kgo.Client // metadata, offsets and group commits
	topicID     [16]byte
	cl          *kgo.Client // the consumer; nil until there is a partition to read
	state       *weir.OperatorList[partitionOffset]
	parts       map[int32]*partState
	order       []int32 // parts' keys, sorted, for a stable snapshot
	known       int32   // partitions of the topic seen so far
	remaining   int     // bounded mode: partitions not done
	idle        *time.Timer
	disc        *discoverer // nil: discovery off
	commits     *committer  // nil: no commits to a group
	snaps       snapshotLog // checkpoint id → offsets, for commits
	// pend holds records polled but not yet handed out by ReadSplit,
	// which returns one partition's run at a time. Their offsets are not
	// in parts yet, so a snapshot taken meanwhile resumes before them.
	pend []*kgo.Record

	rc           *weir.RuntimeContext // bad records to a side output, gauges
	skipped      int64                // bad records skipped (WithSkipBadRecords)
	skippedTotal prometheus.Counter
}

// DeclareStates lists the source's states: the partition offsets in
// union list state, and the same name in plain operator list state, which
// builds before the union state wrote (and which a restore still reads).
func (s *source[T]) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{
		weir.UnionListStateOf[partitionOffset](offsetsState),
		weir.OperatorListStateOf[partitionOffset](offsetsState),
	}
}

func (s *source[T]) Open(ctx context.Context, rc *weir.RuntimeContext) (err error) {
	s.uid, s.subtask, s.parallelism, s.log = rc.UID(), rc.Subtask(), rc.Parallelism(), rc.Logger()
	st, err := weir.GetUnionListState[partitionOffset](rc, offsetsState)
	if err != nil {
		return err
	}
	legacy, err := weir.GetOperatorListState[partitionOffset](rc, offsetsState)
	if err != nil {
		return err
	}
	s.state = st
	if err := s.openBadRecords(rc); err != nil {
		return err
	}
	s.admin, err = kgo.NewClient(append(slices.Clone(s.o.clientOps), kgo.SeedBrokers(s.brokers...))...)
	if err != nil {
		return fmt.Errorf("kafka source %q: client: %w", s.uid, err)
	}
	defer func() {
		if err != nil {
			s.Close(ctx)
		}
	}()
	n, id, err := topicMetadata(ctx, s.admin, s.topic)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.uid, err)
	}
	s.topicID, s.known = id, n
	plan, err := planStart(rc.Restored(), st.Get(), legacy.Get(), n, s.subtask, s.parallelism)
	if err != nil {
		return weir.Unrecoverable(fmt.Errorf("kafka source %q subtask %d, topic %q: %w", s.uid, s.subtask, s.topic, err))
	}
	legacy.Update(nil) // from now on the offsets live in the union state
	start := plan.restored
	fresh, err := s.resolveStart(ctx, plan.fresh)
	if err != nil {
		return fmt.Errorf("kafka source %q: resolve start offset %s: %w", s.uid, s.o.start, err)
	}
	earliest, err := listOffsets(ctx, s.admin, s.topic, plan.earliest, -2)
	if err != nil {
		return fmt.Errorf("kafka source %q: earliest offsets of partitions the checkpoint does not hold: %w", s.uid, err)
	}
	maps.Copy(start, fresh)
	maps.Copy(start, earliest)
	s.parts = map[int32]*partState{}
	s.add(start)
	if s.o.bounded {
		ends, err := listOffsets(ctx, s.admin, s.topic, s.order, -1)
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
	} else if s.o.discovery > 0 {
		s.disc = newDiscoverer(ctx, s.o.discovery, s.o.now(), s.discover)
	}
	if s.o.commitTo != "" {
		s.snaps = snapshotLog{}
		s.commits = newCommitter(ctx, s.admin, s.o.commitTo, s.topic, s.topicID, s.log)
	}
	consume := map[int32]int64{}
	for p, ps := range s.parts {
		if !ps.done {
			consume[p] = ps.next
		}
	}
	return s.consume(consume)
}

// resolveStart resolves the WithStartOffset offset of partitions on a fresh start.
func (s *source[T]) resolveStart(ctx context.Context, parts []int32) (map[int32]int64, error) {
	if s.o.start.kind != startCommitted {
		return listOffsets(ctx, s.admin, s.topic, parts, s.o.start.listOffsetsTimestamp())
	}
	committed, err := fetchCommitted(ctx, s.admin, s.o.start.group, s.topic, parts)
	if err != nil {
		return nil, err
	}
	earliest, err := listOffsets(ctx, s.admin, s.topic, slices.Collect(maps.Keys(committed)), -2)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var rest []int32
	for _, p := range parts {
		if off, ok := committed[p]; ok && off >= earliest[p] {
			out[p] = off
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		s.log.Info("kafka source: partitions without a usable committed offset start at the fallback", "group", s.o.start.group, "partitions", rest, "fallback", s.o.start.fallback().String())
	}
	fb, err := listOffsets(ctx, s.admin, s.topic, rest, s.o.start.fallback().listOffsetsTimestamp())
	if err != nil {
		return nil, err
	}
	maps.Copy(out, fb)
	return out, nil
}

// add makes the subtask read partitions from the given offsets.
func (s *source[T]) add(start map[int32]int64) {
	for p, next := range start {
		s.parts[p] = &partState{next: next, id: strconv.Itoa(int(p))}
		s.order = append(s.order, p)
	}
	slices.Sort(s.order)
}

// consume has the consumer fetch partitions from the given offsets,
// creating it for the first partition.
func (s *source[T]) consume(from map[int32]int64) error {
	if len(from) == 0 {
		return nil
	}
	offsets := map[int32]kgo.Offset{}
	for p, next := range from {
		offsets[p] = kgo.NewOffset().At(next)
	}
	if s.cl != nil {
		s.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: offsets})
		return nil
	}
	// A partition added by discovery is fetched once the client refreshed
	// its metadata, which it does at most every MetadataMinAge, and a
	// fetch already waiting for records of the other partitions ended,
	// after at most FetchMaxWait (both 5 s in franz-go): shorter ones keep
	// the delay small (500 ms is the Java consumer's fetch.max.wait.ms).
	// WithClientOptions may override them.
	opts := append([]kgo.Opt{
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, s.o.clientOps...)
	cl, err := kgo.NewClient(append(opts,
		kgo.SeedBrokers(s.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: offsets}),
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

// discover runs in the background: it asks for the topic's partition
// count and resolves the earliest offset of the partitions new since known
// that this subtask owns. It reads only fields fixed at Open.
func (s *source[T]) discover(ctx context.Context, known int32) discovered {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	d := discovered{known: known, n: known}
	n, _, err := topicMetadata(ctx, s.admin, s.topic)
	if err != nil || n <= known {
		d.err = err
		return d
	}
	d.start, d.err = listOffsets(ctx, s.admin, s.topic, newlyOwned(known, n, s.subtask, s.parallelism), -2)
	if d.err == nil {
		d.n = n
	}
	return d
}

// takeDiscovery takes in a finished discovery, on the task goroutine.
func (s *source[T]) takeDiscovery(d discovered) error {
	if d.err != nil {
		// Transient as a rule; the next discovery tries again.
		s.log.Warn("kafka source: partition discovery failed", "topic", s.topic, "err", d.err)
		return nil
	}
	if d.known != s.known || d.n <= s.known {
		return nil
	}
	s.log.Info("kafka source: discovered partitions", "topic", s.topic, "partitions", d.n, "before", s.known, "reading", slices.Sorted(maps.Keys(d.start)))
	s.known = d.n
	s.add(d.start)
	return s.consume(d.start)
}

func (s *source[T]) Read(ctx context.Context, dst []T, max int) ([]T, error) {
	if s.o.bounded && s.remaining == 0 {
		return dst, io.EOF
	}
	if s.disc != nil {
		if d, ok := s.disc.poll(s.o.now(), s.known); ok {
			if err := s.takeDiscovery(d); err != nil {
				return dst, err
			}
		}
	}
	if s.cl == nil {
		return dst, s.waitIdle(ctx)
	}
	fetches, err := s.poll(ctx, max)
	if err != nil {
		return dst, err
	}
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		dst, err = s.record(dst, r)
	})
	return dst, err
}

// waitIdle waits a poll interval, for a subtask without a partition to
// read (unbounded), so that the task loop does not spin.
func (s *source[T]) waitIdle(ctx context.Context) error {
	if s.idle == nil {
		s.idle = time.NewTimer(s.o.poll)
	} else {
		s.idle.Reset(s.o.poll)
	}
	select {
	case <-s.idle.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll fetches up to max records, bounded by the poll interval so that a
// read returns to the task loop (barriers, timers) while the topic is
// quiet.
func (s *source[T]) poll(ctx context.Context, max int) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, s.o.poll)
	fetches := s.cl.PollRecords(pctx, max)
	cancel()
	s.publishPending(fetches)
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		return fetches, fmt.Errorf("kafka source %q: fetch topic %q partition %d: %w", s.uid, fe.Topic, fe.Partition, fe.Err)
	}
	return fetches, nil
}

// publishPending notes each fetched partition's last stable offset and
// publishes the records the subtask has not read yet, summed over its
// partitions (weir.PendingRecordsGauge: the autoscaler's lag). The end is
// as of each partition's latest fetch; records fetched but not yet handed
// out count as pending.
func (s *source[T]) publishPending(fetches kgo.Fetches) {
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if ps := s.parts[p.Partition]; ps != nil && p.LastStableOffset > ps.stable {
			ps.stable = p.LastStableOffset
		}
	})
	var pending int64
	for _, ps := range s.parts {
		if !ps.done && ps.stable > ps.next {
			pending += ps.stable - ps.next
		}
	}
	s.rc.SetGauge(weir.PendingRecordsGauge, float64(pending))
}

// Splits lists the partitions the subtask reads and has not finished, as
// split ids (weir.SplitReader).
func (s *source[T]) Splits() []string {
	ids := make([]string, 0, len(s.order))
	for _, p := range s.order {
		if ps := s.parts[p]; !ps.done {
			ids = append(ids, ps.id)
		}
	}
	return ids
}

// ReadSplit reads like Read but hands out one partition's records per
// call (weir.SplitReader), so that weir.FromSourceWithWatermarks
// generates watermarks per partition: a partition that lags holds the
// subtask's event time back instead of making its records late. The
// split id is the partition number; a bounded partition's last call says
// Finished.
func (s *source[T]) ReadSplit(ctx context.Context, dst []T, max int) ([]T, weir.Split, error) {
	if len(s.pend) == 0 {
		if s.o.bounded && s.remaining == 0 {
			return dst, weir.Split{}, io.EOF
		}
		if s.disc != nil {
			if d, ok := s.disc.poll(s.o.now(), s.known); ok {
				if err := s.takeDiscovery(d); err != nil {
					return dst, weir.Split{}, err
				}
			}
		}
		if s.cl == nil {
			return dst, weir.Split{}, s.waitIdle(ctx)
		}
		fetches, err := s.poll(ctx, max)
		if err != nil {
			return dst, weir.Split{}, err
		}
		fetches.EachRecord(func(r *kgo.Record) { s.pend = append(s.pend, r) })
		if len(s.pend) == 0 {
			return dst, weir.Split{}, nil
		}
	}
	p := s.pend[0].Partition
	n := 0
	var err error
	for n < len(s.pend) && s.pend[n].Partition == p && len(dst) < max && err == nil {
		dst, err = s.record(dst, s.pend[n])
		s.pend[n] = nil
		n++
	}
	s.pend = s.pend[n:]
	if len(s.pend) == 0 {
		s.pend = s.pend[:0:0]
	}
	split := weir.Split{}
	if ps := s.parts[p]; ps != nil {
		split = weir.Split{ID: ps.id, Finished: ps.done}
	}
	return dst, split, err
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
	return dst, s.badRecord(r, err)
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

// SnapshotState stores the offsets of the partitions this subtask owns;
// the union of all subtasks' elements is every partition the job knows.
func (s *source[T]) SnapshotState(id int64) error {
	els := make([]partitionOffset, 0, len(s.order))
	for _, p := range s.order {
		els = append(els, partitionOffset{Partition: p, Next: s.parts[p].next})
	}
	s.state.Update(els)
	if s.snaps != nil && len(els) > 0 {
		offsets := make(map[int32]int64, len(els))
		for _, e := range els {
			offsets[e.Partition] = e.Next
		}
		s.snaps.add(id, offsets)
	}
	return nil
}

// NotifyCheckpointComplete commits the offsets checkpoint id holds to the
// WithCommitOffsetsToGroup group, in the background (weir.CheckpointListener).
// It never fails: the group's offsets are for monitoring.
func (s *source[T]) NotifyCheckpointComplete(_ context.Context, id int64) error {
	if s.commits == nil {
		return nil
	}
	if offsets := s.snaps.complete(id); offsets != nil {
		s.commits.offer(offsets)
	}
	return nil
}

func (s *source[T]) Close(context.Context) error {
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.disc != nil {
		s.disc.stop()
		s.disc = nil
	}
	if s.commits != nil {
		s.commits.close()
		s.commits = nil
	}
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	return nil
}

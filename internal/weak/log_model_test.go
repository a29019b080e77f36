package weak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLogRandomAgainstModel drives one channel's Log the way the runtime
// will, under seeded random interleavings of a producer and a consumer
// that both crash and restart, and checks the outcome record by record
// against a naive model that knows every record by its sequence number:
//
//   - the producer's output is a function of its position (record i is
//     the id i), so a restarted attempt emits the same ids again, cut into
//     different batches; it snapshots its cursor and restarts from the
//     latest snapshot;
//   - the runtime holds the payloads (the ids) in a ring parallel to the
//     log's entries, frees what Data, LogEvent and Truncate drop, and sends
//     entries Sent()+1.. to the connected consumer: at once after each
//     append (eager), or a few at a time as credits allow (lazy), so that
//     entries wait while the log is bounded;
//   - the consumer reads what it was sent, snapshots (state and position)
//     at random, completes its oldest pending snapshot at random (the log
//     is truncated), crashes (losing its state, what was in flight to it
//     and its pending snapshots) and reconnects from its latest completed
//     snapshot.
//
// After every step the consumer's effective stream (its state: the
// restored snapshot plus what it read since, plus what is in flight to
// it) must hold every id the log handed over at most once, and the ids
// missing from it must be exactly Counters().Lost; Replayed must be the
// number of ids handed over more than once; Skipped and Dropped what the
// model counted. At the end everything is drained and the same holds for
// all ids the producer emitted.
func TestLogRandomAgainstModel(t *testing.T) {
	seeds := uint64(3000)
	if testing.Short() {
		seeds = 500
	}
	seen := map[string]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		if err := runLogModel(seed, seen); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	t.Logf("outcomes over %d seeds: %v", seeds, seen)
	// The generator must keep reaching the interesting cases, or agreement
	// proves little.
	for _, outcome := range []string{"dropped", "lost", "hole", "lost twice from one snapshot", "replayed",
		"replayed twice", "watermark after eop suppressed", "skip", "partial skip", "event suppressed", "eod suppressed", "eop suppressed",
		"released", "consumer crash", "producer restart", "lazy", "eager"} {
		if seen[outcome] < 20 {
			t.Errorf("outcome %q reached %d times, want at least 20: tune runLogModel", outcome, seen[outcome])
		}
	}
}

// logPayload is what the runtime holds for one entry: a batch of ids
// first..first+n-1, or an event (a watermark carries the producer's cursor).
type logPayload struct {
	first, n int
	event    LogEvent
	wm       int
}

// logConsumerState is the consumer's state: every id it processed (counts,
// to see duplicates), the events, and its position in the channel.
type logConsumerState struct {
	counts   []int
	pos      Position
	eod, eop int
	wm       int
}

func (s logConsumerState) clone() logConsumerState {
	s.counts = slices.Clone(s.counts)
	return s
}

type logModel struct {
	r    *rand.Rand
	l    *Log
	max  int
	n    int  // ids the producer emits in all
	lazy bool // the runtime sends as credits allow, not at once
	seen map[string]int

	// The runtime: payloads parallel to the retained entries; and the
	// model's copy of every entry ever logged (index i at entries[i-1]),
	// with the records logged up to it.
	ring    []logPayload
	entries []logPayload
	recEnd  []uint64

	// The producer: its cursor, its latest snapshot, the events it sent in
	// this attempt, and what the model expects of the log.
	pcur, psnap  int
	pEod, pEop   bool
	loggedEod    bool
	loggedEop    bool
	skipped      uint64
	dropped      uint64
	handed       uint64 // the newest entry handed to the current consumer attempt
	handedOver   []int  // times each id was handed to a consumer attempt
	replayed     uint64 // ids handed over again
	scratch      []int
	reconnLostAt map[Position]int

	// The consumer.
	connected bool
	state     logConsumerState
	inflight  []uint64 // entries handed over, not read yet
	pending   []logConsumerState
	completed logConsumerState
}

func runLogModel(seed uint64, seen map[string]int) error {
	r := rand.New(rand.NewPCG(seed, 0x1066))
	m := &logModel{
		r:            r,
		max:          []int{1, 2, 3, 5, 8, 13, 40, 1000}[r.IntN(8)],
		n:            10 + r.IntN(90),
		lazy:         r.IntN(2) == 0,
		seen:         seen,
		reconnLostAt: map[Position]int{},
	}
	m.l = NewLog(m.max)
	m.handedOver = make([]int, m.n)
	m.state = logConsumerState{counts: make([]int, m.n)}
	m.completed = m.state.clone()
	m.connected = true
	if m.lazy {
		seen["lazy"]++
	} else {
		seen["eager"]++
	}
	maxBatch := 1 + r.IntN(6)
	// Weights of the random steps.
	crashP, restartP := r.IntN(4), r.IntN(4)
	for step := 0; step < 4*m.n; step++ {
		var err error
		switch k := r.IntN(100); {
		case k < 30:
			err = m.produce(maxBatch)
		case k < 40:
			err = m.send(1 + r.IntN(3))
		case k < 65:
			err = m.read(1 + r.IntN(3))
		case k < 72:
			m.snapshotConsumer()
		case k < 80:
			err = m.completeSnapshot()
		case k < 80+crashP:
			m.crashConsumer()
		case k < 88:
			err = m.reconnect()
		case k < 93:
			m.psnap = m.pcur
		case k < 93+restartP:
			err = m.restartProducer()
		}
		if err == nil {
			err = m.check(false)
		}
		if err != nil {
			return fmt.Errorf("step %d (max=%d n=%d lazy=%t): %w", step, m.max, m.n, m.lazy, err)
		}
	}
	// Drain: the producer finishes, the consumer reconnects if it is down,
	// and everything is sent and read.
	for !m.pEop {
		if err := m.produce(maxBatch); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	if !m.connected {
		if err := m.reconnect(); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	if err := m.send(int(m.l.End())); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := m.read(len(m.inflight)); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := m.check(true); err != nil {
		return fmt.Errorf("end: %w", err)
	}
	if m.state.eod != 1 || m.state.eop != 1 {
		return fmt.Errorf("end: consumer saw end of data %d times and end of partition %d times, want once each", m.state.eod, m.state.eop)
	}
	return nil
}

// produce emits the producer's next batch or event, and, eagerly, sends
// what the log appended.
func (m *logModel) produce(maxBatch int) error {
	before := m.l.Records()
	switch {
	case m.pcur == m.n && !m.pEod && m.r.IntN(2) == 0:
		return m.event(EventOther, before) // the final watermark, maybe more than once
	case m.pcur == m.n && !m.pEod:
		m.pEod = true
		return m.event(EventEndOfData, before)
	case m.pcur == m.n && !m.pEop:
		m.pEop = true
		return m.event(EventEndOfPartition, before)
	case m.pcur == m.n:
		return nil
	case m.r.IntN(5) == 0:
		return m.event(EventOther, before)
	}
	n := min(1+m.r.IntN(maxBatch), m.n-m.pcur)
	skip, dropped := m.l.Data(n)
	// The log skips exactly the front of the batch it holds already.
	want := 0
	if uint64(m.pcur) < before {
		want = int(min(before-uint64(m.pcur), uint64(n)))
		m.seen["skip"]++
		if want < n {
			m.seen["partial skip"]++
		}
	}
	if skip != want {
		return fmt.Errorf("Data(%d) at cursor %d with %d records logged skipped %d, want %d", n, m.pcur, before, skip, want)
	}
	m.skipped += uint64(skip)
	first := m.pcur + skip
	m.pcur += n
	if skip < n {
		if uint64(first) != before {
			return fmt.Errorf("Data logged ids from %d, but the log held %d: the channel's ids are not contiguous", first, before)
		}
		m.appendEntry(logPayload{first: first, n: n - skip})
		return m.afterAppend(dropped)
	}
	if dropped != 0 {
		return fmt.Errorf("Data(%d) skipped everything but dropped %d entries", n, dropped)
	}
	return nil
}

func (m *logModel) event(e LogEvent, before uint64) error {
	logged, dropped := m.l.Event(e)
	want := uint64(m.pcur) >= before
	switch {
	case !want:
		m.seen["event suppressed"]++
	case e == EventEndOfData && m.loggedEod:
		want = false
		m.seen["eod suppressed"]++
	case m.loggedEop:
		want = false
		m.seen["eop suppressed"]++
		if e == EventOther {
			m.seen["watermark after eop suppressed"]++
		}
	}
	if logged != want {
		return fmt.Errorf("Event(%d) at cursor %d with %d records logged: logged=%t, want %t", e, m.pcur, before, logged, want)
	}
	if !logged {
		if dropped != 0 {
			return fmt.Errorf("Event(%d) not logged but dropped %d entries", e, dropped)
		}
		return nil
	}
	m.loggedEod = m.loggedEod || e == EventEndOfData
	m.loggedEop = m.loggedEop || e == EventEndOfPartition
	m.appendEntry(logPayload{event: e, wm: m.pcur})
	return m.afterAppend(dropped)
}

func (m *logModel) appendEntry(p logPayload) {
	m.entries = append(m.entries, p)
	m.recEnd = append(m.recEnd, m.recordsUpTo(uint64(len(m.entries)-1))+uint64(p.n))
	m.ring = append(m.ring, p)
}

// afterAppend frees the payloads of the entries the bound dropped, and
// eagerly sends what is new.
func (m *logModel) afterAppend(dropped int) error {
	if dropped < 0 || dropped >= len(m.ring) {
		return fmt.Errorf("the bound dropped %d of %d entries: the newest must stay", dropped, len(m.ring))
	}
	for _, p := range m.ring[:dropped] {
		m.dropped += uint64(p.n)
		m.seen["dropped"]++
	}
	// An entry dropped before it was handed to the connected consumer is a
	// hole in its stream.
	if m.connected && m.l.Base() > m.handed {
		m.seen["hole"]++
	}
	m.ring = m.ring[dropped:]
	if dropped > 0 {
		held := 0
		for _, p := range m.ring {
			held += p.n
		}
		if last := m.entries[m.l.Base()-1]; held+last.n <= m.max {
			return fmt.Errorf("the bound dropped entry %d (%d records) though %d records fit the bound %d", m.l.Base(), last.n, held+last.n, m.max)
		}
	}
	if m.connected && !m.lazy {
		return m.send(int(m.l.End()))
	}
	return nil
}

// send hands up to k entries after Sent() to the connected consumer.
func (m *logModel) send(k int) error {
	if !m.connected {
		return nil
	}
	for ; k > 0 && m.l.Sent() < m.l.End(); k-- {
		i := m.l.Sent() + 1
		if i <= m.l.Base() {
			return fmt.Errorf("Sent()=%d is before Base()=%d: the runtime would send a freed payload", i-1, m.l.Base())
		}
		p := m.ring[i-m.l.Base()-1]
		if p != m.entries[i-1] {
			return fmt.Errorf("ring entry %d is %+v, the model logged %+v", i, p, m.entries[i-1])
		}
		for id := p.first; id < p.first+p.n; id++ {
			if m.handedOver[id]++; m.handedOver[id] > 1 {
				m.replayed++
				m.seen["replayed"]++
				if m.handedOver[id] > 2 {
					m.seen["replayed twice"]++
				}
			}
		}
		m.l.MarkSent(i)
		if m.l.Sent() != i {
			return fmt.Errorf("MarkSent(%d) left Sent()=%d", i, m.l.Sent())
		}
		m.handed = i
		m.inflight = append(m.inflight, i)
	}
	return nil
}

// read processes up to k entries in flight to the consumer.
func (m *logModel) read(k int) error {
	for ; k > 0 && len(m.inflight) > 0; k-- {
		i := m.inflight[0]
		m.inflight = m.inflight[1:]
		p := m.entries[i-1]
		if m.state.eop > 0 {
			return fmt.Errorf("consumer read entry %d after end of partition", i)
		}
		if i <= m.state.pos.Buffers {
			return fmt.Errorf("consumer read entry %d at position %s", i, m.state.pos)
		}
		switch p.event {
		case 0:
			for id := p.first; id < p.first+p.n; id++ {
				m.state.counts[id]++
			}
		case EventOther:
			// A watermark follows exactly the records emitted before it,
			// and watermarks never go back.
			if uint64(p.wm) != m.recordsUpTo(i) || p.wm < m.state.wm {
				return fmt.Errorf("watermark %d at entry %d after %d records (previous %d)", p.wm, i, m.recordsUpTo(i), m.state.wm)
			}
			m.state.wm = p.wm
		case EventEndOfData:
			m.state.eod++
		case EventEndOfPartition:
			m.state.eop++
		}
		m.state.pos = Position{Buffers: i, Records: m.recordsUpTo(i)}
	}
	return nil
}

// recordsUpTo is the records logged in entries 1..i.
func (m *logModel) recordsUpTo(i uint64) uint64 {
	if i == 0 {
		return 0
	}
	return m.recEnd[i-1]
}

func (m *logModel) snapshotConsumer() {
	if m.connected {
		m.pending = append(m.pending, m.state.clone())
	}
}

// completeSnapshot completes the consumer's oldest pending snapshot: it
// becomes the one to restore, and the log releases what it covers.
func (m *logModel) completeSnapshot() error {
	if len(m.pending) == 0 {
		return nil
	}
	s := m.pending[0]
	m.pending = m.pending[1:]
	m.completed = s
	base := m.l.Base()
	released, err := m.l.Truncate(s.pos)
	if err != nil {
		return fmt.Errorf("Truncate(%s): %w", s.pos, err)
	}
	want := 0
	if s.pos.Buffers > base {
		want = int(s.pos.Buffers - base)
		m.seen["released"]++
	}
	if released != want {
		return fmt.Errorf("Truncate(%s) with base %d released %d entries, want %d", s.pos, base, released, want)
	}
	m.ring = m.ring[released:]
	return nil
}

func (m *logModel) crashConsumer() {
	if !m.connected {
		return
	}
	m.seen["consumer crash"]++
	m.connected = false
	m.inflight = nil
	m.pending = nil
}

// reconnect restores the consumer from its latest completed snapshot and
// starts the replay.
func (m *logModel) reconnect() error {
	if m.connected {
		return nil
	}
	m.state = m.completed.clone()
	p := m.state.pos
	base := m.l.Base()
	from, lost, err := m.l.Reconnect(p)
	if err != nil {
		return fmt.Errorf("Reconnect(%s): %w", p, err)
	}
	if want := max(p.Buffers, base) + 1; from != want {
		return fmt.Errorf("Reconnect(%s) with base %d: from=%d, want %d", p, base, from, want)
	}
	if lost > 0 {
		m.seen["lost"]++
		if m.reconnLostAt[p]++; m.reconnLostAt[p] == 2 {
			m.seen["lost twice from one snapshot"]++
		}
	}
	m.connected = true
	m.handed = from - 1
	if !m.lazy {
		return m.send(int(m.l.End()))
	}
	return nil
}

func (m *logModel) restartProducer() error {
	m.seen["producer restart"]++
	if err := m.l.Restart(uint64(m.psnap)); err != nil {
		return fmt.Errorf("Restart(%d): %w", m.psnap, err)
	}
	m.pcur = m.psnap
	m.pEod, m.pEop = false, false
	return nil
}

// check compares the log with the model. With end, every id the producer
// emitted must be accounted for.
func (m *logModel) check(end bool) error {
	l := m.l
	if got, want := l.End(), uint64(len(m.entries)); got != want {
		return fmt.Errorf("End()=%d, the model logged %d entries", got, want)
	}
	if got, want := l.End()-l.Base(), uint64(len(m.ring)); got != want {
		return fmt.Errorf("the log retains %d entries, the ring %d", got, want)
	}
	held := uint64(0)
	for k, p := range m.ring {
		if p != m.entries[l.Base()+uint64(k)] {
			return fmt.Errorf("ring entry %d is %+v, the model logged %+v", l.Base()+uint64(k)+1, p, m.entries[l.Base()+uint64(k)])
		}
		held += uint64(p.n)
	}
	if l.Held() != held {
		return fmt.Errorf("Held()=%d, the ring holds %d records", l.Held(), held)
	}
	if held > uint64(m.max) && len(m.ring) > 1 {
		return fmt.Errorf("the log holds %d records in %d entries, bound %d", held, len(m.ring), m.max)
	}
	if l.Records() != m.recordsUpTo(l.End()) || l.Cursor() != uint64(m.pcur) {
		return fmt.Errorf("Records()=%d Cursor()=%d, model %d and %d", l.Records(), l.Cursor(), m.recordsUpTo(l.End()), m.pcur)
	}
	if l.Sent() < l.Base() || l.Sent() > l.End() {
		return fmt.Errorf("Sent()=%d outside [Base()=%d, End()=%d]", l.Sent(), l.Base(), l.End())
	}
	c := l.Counters()
	if c.Replayed != m.replayed || c.Skipped != m.skipped || c.Dropped != m.dropped {
		return fmt.Errorf("counters %+v, model replayed=%d skipped=%d dropped=%d", c, m.replayed, m.skipped, m.dropped)
	}
	if c.Lost > c.Dropped {
		return fmt.Errorf("counters %+v: more lost than dropped", c)
	}
	if !m.connected {
		return nil
	}
	// The consumer's effective stream: its state and what is in flight to
	// it. Every id the log handed over or dropped up to Sent() is in it
	// once or counted lost.
	counts := append(m.scratch[:0], m.state.counts...)
	m.scratch = counts
	for _, i := range m.inflight {
		p := m.entries[i-1]
		for id := p.first; id < p.first+p.n; id++ {
			counts[id]++
		}
	}
	upto := m.recordsUpTo(l.Sent())
	if end {
		upto = uint64(m.n)
	}
	missing := uint64(0)
	for id, n := range counts {
		switch {
		case n > 1:
			return fmt.Errorf("id %d is %d times in the consumer's effective stream (counters %+v)", id, n, c)
		case n == 0 && uint64(id) < upto:
			missing++
		case n == 1 && uint64(id) >= upto:
			return fmt.Errorf("id %d is in the consumer's effective stream beyond Sent()=%d (%d records)", id, l.Sent(), upto)
		}
	}
	if missing != c.Lost {
		return fmt.Errorf("%d ids missing from the consumer's effective stream up to %d records, Lost=%d (counters %+v)", missing, upto, c.Lost, c)
	}
	return nil
}

package weak

import (
	"cmp"
	"fmt"
	"slices"
)

// Position is how far a consumer read one input channel: the log entries
// (buffers: data batches and events, in send order) and the records they
// held. A task's snapshot stores one per input channel; the producer's log
// is truncated up to it once the snapshot completes, and a restarted
// consumer is replayed what follows it. Both numbers count in the
// producer's log, entries the consumer never got included: where entries
// were dropped before it read them (Reconnect's from, or a hole) its
// position jumps to the next entry's, so the runtime stamps each buffer
// it sends with its Position. Truncate and Reconnect reject positions
// that do not match the log.
type Position struct {
	Buffers uint64 `json:"buffers"`
	Records uint64 `json:"records"`
}

func (p Position) String() string { return fmt.Sprintf("%d/%d", p.Buffers, p.Records) }

// LogEvent is the kind of an event entry. Watermarks and status changes may be
// logged many times; end of data and end of partition only once.
type LogEvent uint8

const (
	// EventOther is any event that may repeat (watermark, status).
	EventOther LogEvent = iota + 1
	// EventEndOfData is the producer's end of data.
	EventEndOfData
	// EventEndOfPartition is the producer's last buffer.
	EventEndOfPartition
	// EventResumed stands, in a log restored from its producer's snapshot
	// (ResumeWith), for the entries the lost log held after the snapshot:
	// it is never sent, so a consumer sees a hole there.
	EventResumed
)

// entry is one logged buffer: a data batch of records (event 0) or an
// event.
type entry struct {
	records uint64
	event   LogEvent
}

// Log is the bookkeeping of one producer's output channel in
// WEAKLY_CONSISTENT mode. Entries are numbered from 1 in send order. The
// log keeps every entry a consumer's completed snapshot does not cover
// yet, up to a bound in records, and survives both ends of the channel
// restarting:
//
//   - a restarted consumer reconnects at the Position of its snapshot and
//     is sent every retained entry after it again (Reconnect); entries
//     already dropped are counted as lost, exactly, and so are entries the
//     bound drops before they were sent (the consumer has a hole there);
//   - a restarted producer re-emits its records from the output position
//     of its snapshot; the log skips those it holds already (Data returns
//     how many), so the consumer never sees them twice as long as the
//     producer replays deterministically.
//
// The runtime keeps the payloads in a ring parallel to the entries (index
// i at Base()+k) and performs the sends; Log is not safe for concurrent
// use.
type Log struct {
	max uint64 // records retained before the oldest entries are dropped

	entries []entry // retained entries, oldest first: indexes base+1 ..
	base    uint64  // index of the newest entry no longer retained
	baseRec uint64  // records in entries up to base
	held    uint64  // records in retained entries

	end      uint64 // index of the newest entry
	endRec   uint64 // records logged in all
	sent     uint64 // entries handed to the current consumer attempt
	highSent uint64 // entries handed to any consumer attempt: sending one again is a replay
	// truncated is the newest Position a consumer's completed snapshot
	// covered; entries up to it were released, not dropped.
	truncated Position
	// counted are the records, as ranges of record positions, already
	// counted lost: dropped before they were sent (holes), or needed by a
	// reconnect. A later reconnect from before them must not count them
	// again (a consumer that fails twice from one snapshot, or whose
	// snapshot is older than a hole). Ranges below the newest completed
	// snapshot or reconnect are forgotten: a consumer never restores from
	// before those.
	counted []recRange

	cursor uint64 // records the current producer attempt emitted, from its restore point
	// resume is set on a log that continues one lost with its producer's
	// process (Resume, ResumeWith); parked is the position of a consumer that
	// reconnected before anything was logged (nil: none did).
	resume *resumeState
	parked *Position
	// parkedSettled: ResumeWith settled the numbering to a parked
	// consumer's position (Parked).
	parkedSettled bool
	eod           bool
	eop           bool
	counter       Counters
}

// Counters are a log's accounting since it was created.
type Counters struct {
	// Replayed are records sent again to a restarted consumer.
	Replayed uint64
	// Lost are records a consumer needed that were dropped: before they
	// were sent to it (counted as they are dropped), or after, when it
	// restarts from before them (counted by Reconnect). Each once.
	Lost uint64
	// Dropped are records dropped for the size bound, those lost for it
	// included (the others are at risk: lost if a consumer restarts from
	// before them). Records lost with a producer's process (Resume) are
	// Lost, not Dropped.
	Dropped uint64
	// Skipped are records a restarted producer emitted again and the log
	// held already.
	Skipped uint64
}

// recRange is the records after position from up to position to.
type recRange struct{ from, to uint64 }

// NewLog returns an empty log keeping up to maxRecords records (at least
// the newest entry is always kept).
func NewLog(maxRecords int) *Log {
	return &Log{max: uint64(max(maxRecords, 1))}
}

// Data records that the producer emitted a batch of n records and returns
// how many of them, from the front, the log holds already (a restarted
// producer emitting again what its earlier attempt logged): the caller
// drops those and, if any remain, logs the rest as one new entry, whose
// index is End() afterwards. dropped is the number of oldest entries the
// size bound removed (the caller frees their payloads).
func (l *Log) Data(n int) (skip, dropped int) {
	if n <= 0 {
		return 0, 0
	}
	first := l.cursor
	l.cursor += uint64(n)
	if first < l.endRec {
		skip = int(min(l.endRec-first, uint64(n)))
		l.counter.Skipped += uint64(skip)
	}
	if skip == n {
		return skip, 0
	}
	return skip, l.append(entry{records: uint64(n - skip)})
}

// Event records that the producer sent an event and reports whether it is
// logged (and must be sent). A restarted producer's events are not logged
// while it re-emits records the log holds (the earlier attempt's events
// are in the log between them), nor a second end of data, nor anything
// after the end of partition: a producer restarted after its last buffer
// emits its final watermark again, and the consumer's channel is closed.
func (l *Log) Event(e LogEvent) (logged bool, dropped int) {
	switch {
	case l.cursor < l.endRec:
		return false, 0
	case l.eop, e == EventEndOfData && l.eod:
		return false, 0
	}
	if e == EventEndOfData {
		l.eod = true
	}
	if e == EventEndOfPartition {
		l.eop = true
	}
	return true, l.append(entry{event: e})
}

// append logs x and enforces the bound, returning the entries dropped.
func (l *Log) append(x entry) (dropped int) {
	l.entries = append(l.entries, x)
	l.end++
	l.endRec += x.records
	l.held += x.records
	for l.held > l.max && len(l.entries) > 1 {
		n := l.entries[0].records
		l.counter.Dropped += n
		if l.sent == l.base && n > 0 {
			// Not sent to the current consumer attempt, which needs it
			// (a live consumer as much as a failed one, which restarts
			// from a position it read, before this): lost now, once.
			// Counting it at the reconnect instead would miss the holes
			// of a consumer that never fails, and a reconnect from after
			// the hole.
			l.counter.Lost += n
			l.addCounted(l.baseRec, l.baseRec+n)
		}
		l.dropFront()
		dropped++
	}
	return dropped
}

func (l *Log) dropFront() {
	x := l.entries[0]
	l.entries[0] = entry{}
	l.entries = l.entries[1:]
	l.base++
	l.baseRec += x.records
	l.held -= x.records
	if l.sent < l.base {
		l.sent = l.base // never sent to the current attempt; the runtime goes on after it
	}
}

// MarkSent records that entries up to index i went to the current
// consumer attempt. Records in entries an earlier attempt was sent
// already count as replayed.
func (l *Log) MarkSent(i uint64) {
	if i <= l.sent || i > l.end {
		return
	}
	for k := l.sent + 1; k <= min(i, l.highSent); k++ {
		l.counter.Replayed += l.entries[k-l.base-1].records
	}
	l.sent = i
	l.highSent = max(l.highSent, i)
}

// Truncate releases the entries a consumer's completed snapshot at p
// covers and returns how many were released. A p beyond the log is an
// error: the consumer read what this log never held. Before anything was
// logged it does nothing.
func (l *Log) Truncate(p Position) (released int, err error) {
	if l.untouched() || l.pastRestored(p) {
		// Nothing to release, and no numbering yet to check p against
		// (a resumed log waiting for its consumer's position), or p is
		// in the lost log's numbering after what was restored (the next
		// reconnect settles it).
		return 0, nil
	}
	if err := l.check(p); err != nil {
		return 0, err
	}
	if p.Buffers > l.truncated.Buffers {
		l.truncated = p
		l.forgetCounted(p.Records)
	}
	for l.base < p.Buffers && len(l.entries) > 0 {
		l.dropFront()
		released++
	}
	return released, nil
}

// Reconnect starts the replay for a restarted consumer whose snapshot read
// up to p (the zero Position: it restarted without a snapshot): the
// caller sends the entries from index `from` to End(), and lost records
// were dropped before the consumer could read them and not counted lost
// before (a hole in an earlier attempt's stream, or an earlier reconnect
// from the same snapshot). Records in entries an earlier attempt was sent
// count as replayed when they go again (MarkSent).
func (l *Log) Reconnect(p Position) (from uint64, lost uint64, err error) {
	if l.untouched() {
		return l.reconnectUntouched(p)
	}
	if l.resume != nil && l.resume.restored && !l.resume.final {
		return l.settleRestored(p)
	}
	return l.reconnectWithin(p)
}

// reconnectWithin is Reconnect for a position within the log's numbering.
func (l *Log) reconnectWithin(p Position) (from uint64, lost uint64, err error) {
	if err := l.check(p); err != nil {
		return 0, 0, err
	}
	from = p.Buffers + 1
	if l.base >= from {
		lost = l.baseRec - p.Records - l.countedIn(p.Records, l.baseRec)
		l.addCounted(p.Records, l.baseRec)
		from = l.base + 1
	}
	l.forgetCounted(p.Records)
	l.counter.Lost += lost
	l.sent = from - 1
	return from, lost, nil
}

// addCounted records that the records in (from, to] are counted lost,
// merging ranges so the list stays sorted and disjoint.
func (l *Log) addCounted(from, to uint64) {
	if from >= to {
		return
	}
	out := l.counted[:0:0]
	for _, r := range l.counted {
		switch {
		case r.to < from || r.from > to:
			out = append(out, r)
		default: // overlapping or adjacent: merge
			from, to = min(from, r.from), max(to, r.to)
		}
	}
	out = append(out, recRange{from, to})
	slices.SortFunc(out, func(a, b recRange) int { return cmp.Compare(a.from, b.from) })
	l.counted = out
}

// countedIn is the number of records in (from, to] counted lost already.
func (l *Log) countedIn(from, to uint64) (n uint64) {
	for _, r := range l.counted {
		if lo, hi := max(r.from, from), min(r.to, to); lo < hi {
			n += hi - lo
		}
	}
	return n
}

// forgetCounted drops the counted ranges at or before the record position
// a consumer restored from or completed a snapshot at: it never restores
// from before that again.
func (l *Log) forgetCounted(at uint64) {
	l.counted = slices.DeleteFunc(l.counted, func(r recRange) bool { return r.to <= at })
}

// check reports whether p is a position this log could have delivered:
// within the log, and holding the records its entries hold.
func (l *Log) check(p Position) error {
	if p.Buffers > l.end || p.Records > l.endRec {
		return fmt.Errorf("consumer position %s is beyond the producer's log (%d buffers, %d records): the log was lost with its producer's process", p, l.end, l.endRec)
	}
	// The records in entries 1..p.Buffers: known for retained entries; for
	// dropped ones (whose sizes are forgotten) at most baseRec.
	want, exact := l.baseRec, true
	switch {
	case p.Buffers == 0:
		want = 0
	case p.Buffers < l.base:
		exact = false
	default:
		for _, x := range l.entries[:p.Buffers-l.base] {
			want += x.records
		}
	}
	if p.Records > want || exact && p.Records != want {
		hold := "hold"
		if !exact {
			hold = "hold at most"
		}
		return fmt.Errorf("consumer position %s does not match the producer's log, whose first %d buffers %s %d records: the consumer counted its position otherwise", p, p.Buffers, hold, want)
	}
	return nil
}

// Restart rewinds the producer's cursor to the output position of the
// snapshot its new attempt restored (records it had emitted then), so
// that Data skips what the log holds. A position beyond the log is an
// error: the snapshot covers output this log never saw.
func (l *Log) Restart(records uint64) error {
	if l.resume != nil && !l.resume.final && !l.resume.restored {
		// Resumed, still waiting for the consumer's position: the new
		// attempt resumes from its own snapshot instead.
		l.resume.records, l.cursor = records, records
		return nil
	}
	if records > l.endRec {
		return fmt.Errorf("producer restored at %d records, beyond its log's %d: the log was lost with its process", records, l.endRec)
	}
	l.cursor = records
	return nil
}

// Base is the index of the newest entry no longer retained: entry i is at
// offset i-Base()-1 of the retained ones.
func (l *Log) Base() uint64 { return l.base }

// BaseRecords is the records in the entries up to Base.
func (l *Log) BaseRecords() uint64 { return l.baseRec }

// End is the index of the newest entry.
func (l *Log) End() uint64 { return l.end }

// Sent is the newest entry handed to the current consumer attempt.
func (l *Log) Sent() uint64 { return l.sent }

// Records is the number of records logged in all; Held those retained.
func (l *Log) Records() uint64 { return l.endRec }

// Held is the number of records retained.
func (l *Log) Held() uint64 { return l.held }

// Cursor is the records the current producer attempt emitted, counted
// from the start of the channel; past Records() it is live.
func (l *Log) Cursor() uint64 { return l.cursor }

// Counters returns the log's accounting.
func (l *Log) Counters() Counters { return l.counter }

// EndOfPartition reports whether the producer's last buffer is logged.
func (l *Log) EndOfPartition() bool { return l.eop }

// Max is the bound in records the log was made with (at least 1).
func (l *Log) Max() uint64 { return l.max }

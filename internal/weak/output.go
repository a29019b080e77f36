package weak

// Output decides what one producer output channel does with each buffer
// its producer sends, around the channel's Log: wait, discard, skip, or
// log it and then hold it for a replay or send it now. The runtime
// (internal/runtime's weak sender) holds the payloads, the consumer's
// channel and the lock; it asks Output for a verdict, performs it —
// waiting or sending with its lock released, the only blocking calls —
// and reports a send's outcome back. Everything a verdict depends on
// besides the Log is here, so the rules read and test as one piece:
//
//   - while a log rebuilt after its process was lost waits for the
//     consumer's position (Log.Pending), every send waits;
//   - once the consumer finished (Close), everything is discarded;
//   - while no consumer reads live sends, a producer whose log is full
//     waits rather than drop what the consumer has not read (which would
//     lose it for sure) — unless it re-emits records the log holds, which
//     are skipped, not logged;
//   - records a restarted producer emits again that the log holds are
//     skipped (and counted possibly duplicated when the producer cannot
//     replay deterministically);
//   - a watermark not above the largest logged is dropped, so a restarted
//     producer never moves event time backwards downstream.
//
// Output is not safe for concurrent use.
type Output struct {
	log *Log
	// closed: the consumer finished; what is sent is discarded.
	closed bool
	// nondet: the current producer attempt may emit other records than
	// its predecessor did.
	nondet bool
	// wm is the largest watermark logged.
	wm    int64
	hasWM bool
}

// NewOutput returns the decisions around log.
func NewOutput(log *Log) *Output { return &Output{log: log} }

// Decision is what a verdict tells the runtime to do with a buffer.
type Decision uint8

const (
	// Wait: wait (lock released) until a consumer connects and its
	// replay caught up, then ask again. Why says why, for the error a
	// cancelled wait returns.
	Wait Decision = iota + 1
	// Discard: the consumer finished; drop the buffer.
	Discard
	// Skip: nothing to log or send (re-emitted records the log holds, a
	// watermark not above the last, an end already logged); drop it.
	Skip
	// Hold: logged; no consumer reads live sends now (or a replay still
	// owes earlier entries, and will send this one too): keep the
	// payload, do not send.
	Hold
	// Send: logged; send it to the consumer now, then report the
	// outcome with Sent.
	Send
)

func (a Decision) String() string {
	return [...]string{"?", "wait", "discard", "skip", "hold", "send"}[a]
}

// WaitReason says why a verdict waits.
type WaitReason uint8

const (
	// WaitPosition: a rebuilt log waits for the consumer's position.
	WaitPosition WaitReason = iota + 1
	// WaitFull: the log is full and no consumer reads.
	WaitFull
)

// Verdict is the decision on one buffer.
type Verdict struct {
	Do  Decision
	Why WaitReason // for Wait
	// Skip is the records at the front of a data batch the log holds
	// already (drop them before logging the rest).
	Skip int
	// Released is the oldest entries the log's bound dropped to make
	// room: free their payloads.
	Released int
	// Duplicated is the records to count as possibly duplicated.
	Duplicated int
	// Entry and At are the logged buffer's index and its position, which
	// the runtime stamps on it (Hold and Send).
	Entry uint64
	At    Position
}

// Data decides on a batch of n records; live says a consumer reads live
// sends now.
func (o *Output) Data(n int, live bool) Verdict {
	if v, done := o.gate(); done {
		if v.Do == Discard && o.nondet {
			// A producer that cannot re-emit deterministically may have
			// emitted another record than the one the consumer read at
			// that position.
			v.Duplicated = n
		}
		return v
	}
	l := o.log
	if !live && l.Held() > 0 && l.Held()+uint64(n) > l.max && l.Cursor() >= l.Records() {
		return Verdict{Do: Wait, Why: WaitFull}
	}
	skip, dropped := l.Data(n)
	v := Verdict{Skip: skip, Released: dropped}
	if o.nondet {
		v.Duplicated = skip
	}
	if skip >= n {
		v.Do = Skip
		return v
	}
	return o.logged(v, live)
}

// Event decides on an event buffer of kind e; a watermark (isWM) carries
// its timestamp wm.
func (o *Output) Event(e LogEvent, isWM bool, wm int64, live bool) Verdict {
	if v, done := o.gate(); done {
		return v
	}
	if isWM && o.hasWM && wm <= o.wm {
		return Verdict{Do: Skip}
	}
	logged, dropped := o.log.Event(e)
	v := Verdict{Released: dropped}
	if !logged {
		v.Do = Skip
		return v
	}
	if isWM {
		o.wm, o.hasWM = wm, true
	}
	return o.logged(v, live)
}

// gate is the part of a verdict that does not depend on the buffer.
func (o *Output) gate() (Verdict, bool) {
	switch {
	case o.closed:
		return Verdict{Do: Discard}, true
	case o.log.Pending():
		return Verdict{Do: Wait, Why: WaitPosition}, true
	}
	return Verdict{}, false
}

// logged completes the verdict on a buffer the log took.
func (o *Output) logged(v Verdict, live bool) Verdict {
	l := o.log
	v.Entry, v.At = l.End(), Position{Buffers: l.End(), Records: l.Records()}
	if live && l.Sent() == v.Entry-1 {
		v.Do = Send
	} else {
		v.Do = Hold
	}
	return v
}

// Sent reports the outcome of a Send verdict for entry: delivered, unless
// the consumer changed while it was sent (current false: the next
// consumer's replay covers the entry) or the send failed.
func (o *Output) Sent(entry uint64, current bool, err error) {
	if err == nil && current {
		o.log.MarkSent(entry)
	}
}

// Close makes the channel discard what it is sent from now on: its
// consumer finished.
func (o *Output) Close() { o.closed = true }

// Closed reports whether Close was called.
func (o *Output) Closed() bool { return o.closed }

// SetNondeterministic says whether the current producer attempt may emit
// other records than its predecessor did (it lost input, or its replay
// found a gap): records the log skips, or discards, then count as
// possibly duplicated.
func (o *Output) SetNondeterministic(on bool) { o.nondet = on }

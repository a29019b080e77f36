package weak

import "fmt"

// A log lives in its producer's process. When that process is lost (a
// TaskManager dies), the producer restarts elsewhere from its own snapshot
// with a new, empty log, and each consumer reconnects at the position it
// read the old log to (its snapshot's, or a live one). Resume lets the new
// log continue the old one's numbering so that positions stay comparable:
//
//   - the consumer read at least as far as the producer restored (records
//     p.Records >= the producer's restored records c): the producer's
//     re-emitted records up to p.Records are skipped (Data);
//   - the consumer read less: the records in (p.Records, c] left with the
//     old log and are counted lost.
//
// Either way the new log numbers its first entry one past an entry that
// stands for the old log's rest, so the consumer sees a hole: the new
// log's entries are cut differently from the old one's (and a producer
// that lost its determinants with the process may emit other records), so
// a consumer replaying its own determinants cannot follow them, and reads
// on freely.
//
// Until both the producer's Resume and the consumer's Reconnect arrived,
// in either order, the log is Pending: the producer must not log.
type resumeState struct {
	records uint64
	final   bool
	// restored: ResumeWith, and no consumer reconnected past the restored
	// entries yet.
	restored bool
}

// Resume makes an untouched log continue one lost with its producer's
// process: the producer restored at output position records (its
// snapshot's). It is an error on a log that logged anything.
func (l *Log) Resume(records uint64) error {
	if !l.untouched() || l.resume != nil {
		return fmt.Errorf("resume at %d records: the log holds entries already (only a log created after its producer's process was lost resumes)", records)
	}
	l.resume = &resumeState{records: records}
	l.cursor = records
	if l.parked != nil {
		l.finish(*l.parked)
	}
	return nil
}

// Pending reports whether a resumed log still waits for its consumer's
// position: the producer must wait before it logs anything.
func (l *Log) Pending() bool { return l.resume != nil && !l.resume.final }

// untouched reports whether nothing was logged yet and no resume settled
// the numbering.
func (l *Log) untouched() bool {
	return l.end == 0 && l.endRec == 0 && (l.resume == nil || !l.resume.final)
}

// reconnectUntouched is Reconnect before anything was logged: the
// position settles a pending resume, or is parked until the producer says
// whether it resumes (a consumer may read the data plane before its
// producer was deployed again).
func (l *Log) reconnectUntouched(p Position) (from, lost uint64, err error) {
	if l.resume == nil {
		l.parked = &p
		return l.end + 1, 0, nil
	}
	lost = l.finish(p)
	return l.base + 1, lost, nil
}

// finish settles a resumed log's numbering at consumer position p and
// returns the records counted lost.
func (l *Log) finish(p Position) (lost uint64) {
	r := l.resume
	r.final = true
	l.parked = nil
	l.base, l.baseRec = p.Buffers, p.Records
	if p.Records < r.records {
		lost = r.records - p.Records
		l.counter.Lost += lost
		l.addCounted(p.Records, r.records)
		l.baseRec = r.records
	}
	l.base++ // the phantom entry: the consumer sees a hole
	l.end, l.endRec = l.base, l.baseRec
	l.sent, l.highSent = l.base, l.base
	l.truncated = p
	return lost
}

// Entry is a retained entry of a log as its producer's snapshot stores it
// (ResumeWith): its records, or its event.
type Entry struct {
	Records uint64
	Event   LogEvent
}

// Retained returns the entries the log retains, oldest first (index
// Base()+1 first), for the producer's snapshot.
func (l *Log) Retained() []Entry {
	out := make([]Entry, len(l.entries))
	for i, x := range l.entries {
		out[i] = Entry{Records: x.records, Event: x.event}
	}
	return out
}

// ResumeWith makes an untouched log continue one lost with its producer's
// process from what the producer's snapshot stored of it: the entries it
// retained then, after position base, and the producer's output position
// cursor. The restored entries are the lost log's own, so a consumer
// replays them as it read them before; one entry (EventResumed, never
// sent) stands for whatever the lost log held after the snapshot, so a
// consumer sees a hole where the new entries start. A consumer that read
// past the restored entries (Reconnect) skips to its own position, the
// producer's re-emission up to it skipped.
func (l *Log) ResumeWith(base Position, entries []Entry, cursor uint64) error {
	if !l.untouched() || l.resume != nil {
		return fmt.Errorf("resume at %s: the log holds entries already (only a log created after its producer's process was lost resumes)", base)
	}
	saved := *l
	if err := l.resumeWith(base, entries, cursor); err != nil {
		*l = saved // as untouched as before
		return err
	}
	return nil
}

func (l *Log) resumeWith(base Position, entries []Entry, cursor uint64) error {
	l.base, l.baseRec = base.Buffers, base.Records
	l.end, l.endRec = base.Buffers, base.Records
	l.sent, l.highSent = base.Buffers, base.Buffers
	l.truncated = base
	for _, x := range entries {
		l.entries = append(l.entries, entry{records: x.Records, event: x.Event})
		l.end++
		l.endRec += x.Records
		l.held += x.Records
		switch x.Event {
		case EventEndOfData:
			l.eod = true
		case EventEndOfPartition:
			l.eop = true
		}
	}
	if cursor > l.endRec {
		return fmt.Errorf("resume at %s: the producer's output position %d is beyond the %d records its snapshot's log held", base, cursor, l.endRec)
	}
	l.entries = append(l.entries, entry{event: EventResumed})
	l.end++
	l.cursor = cursor
	l.resume = &resumeState{records: cursor, restored: true}
	if l.parked != nil {
		p := *l.parked
		l.parked = nil
		l.parkedSettled = true
		if _, _, err := l.settleRestored(p); err != nil {
			return err
		}
	}
	return nil
}

// settleRestored is the first Reconnect to a log ResumeWith restored,
// which fixes its numbering: a consumer within the restored entries is
// replayed from its position, one past them skips to its own. The restored
// entries up to a consumer's position were sent to it (by the lost log):
// sending them again, to a later attempt restarted from before, is a
// replay.
func (l *Log) settleRestored(p Position) (from, lost uint64, err error) {
	l.resume.final = true
	if p.Buffers >= l.end || p.Records > l.endRec {
		return l.reconnectPast(p), 0, nil
	}
	if from, lost, err = l.reconnectWithin(p); err == nil {
		l.highSent = max(l.highSent, p.Buffers)
	}
	return from, lost, err
}

// reconnectPast is Reconnect on a log restored by ResumeWith for a
// consumer that read past its restored entries: it read the lost log's
// entries after the snapshot. The log releases everything, numbers on
// after the consumer's position (one entry standing for the hole), and
// the producer's re-emission up to the consumer's position is skipped.
func (l *Log) reconnectPast(p Position) (from uint64) {
	l.entries = l.entries[:0]
	l.held = 0
	l.base, l.baseRec = p.Buffers+1, max(p.Records, l.endRec)
	l.end, l.endRec = l.base, l.baseRec
	l.sent, l.highSent = l.base, l.base
	l.truncated = p
	l.forgetCounted(p.Records)
	return l.base + 1
}

// pastRestored reports whether p, a consumer's completed snapshot, is a
// position in the lost log after what ResumeWith restored of it, while
// the log waits for its first reconnect: it releases nothing then.
func (l *Log) pastRestored(p Position) bool {
	return l.resume != nil && l.resume.restored && !l.resume.final && (p.Buffers >= l.end || p.Records > l.endRec)
}

// Parked reports whether a consumer reconnected before the producer
// resumed the log: ResumeWith settled it to that consumer's position, and
// the runtime replays the restored entries to it.
func (l *Log) Parked() bool { return l.parkedSettled }

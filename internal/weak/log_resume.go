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

package ordercheck

import "fmt"

// SourceReport is what the committed output holds of one source subtask's
// sequence.
type SourceReport struct {
	// Committed counts the source's committed records, duplicates included.
	Committed int64
	// OutOfOrder counts records that do not continue their key: the seq is
	// not the key's previous committed seq plus the lanes (the lane itself
	// for the key's first record). Regressions and gaps both count.
	OutOfOrder int64
	// Gaps counts the out-of-order records whose seq is beyond the expected
	// one: records skipped, never fine in any mode.
	Gaps int64
	// InAttemptDisorder counts the out-of-order records written by the same
	// attempt as the key's previous committed record. At-least-once output
	// may restart a key's sequence where an attempt begins (a replay), never
	// inside one.
	InAttemptDisorder int64
	// Duplicates counts records whose seq was committed before.
	Duplicates int64
	// Missing counts seqs in [0, records) never committed.
	Missing int64
	// Flagged counts committed records the check stage flagged.
	Flagged int64
}

// Report is the analysis of a run's committed output, per source subtask.
type Report struct {
	Sources []SourceReport
	// Foreign counts committed records of no source subtask, or with a seq
	// outside [0, records).
	Foreign int64
}

// Total sums the per-source reports.
func (r Report) Total() SourceReport {
	var t SourceReport
	for _, s := range r.Sources {
		t.Committed += s.Committed
		t.OutOfOrder += s.OutOfOrder
		t.Gaps += s.Gaps
		t.InAttemptDisorder += s.InAttemptDisorder
		t.Duplicates += s.Duplicates
		t.Missing += s.Missing
		t.Flagged += s.Flagged
	}
	return t
}

// String lists the totals and the per-source figures.
func (r Report) String() string {
	t := r.Total()
	s := fmt.Sprintf("committed=%d out-of-order=%d (gaps=%d, within an attempt=%d) duplicates=%d missing=%d flagged=%d foreign=%d",
		t.Committed, t.OutOfOrder, t.Gaps, t.InAttemptDisorder, t.Duplicates, t.Missing, t.Flagged, r.Foreign)
	for i, x := range r.Sources {
		s += fmt.Sprintf("\n  source %d: %+v", i, x)
	}
	return s
}

// keyCursor is Analyse's view of one key: the last committed seq and the
// attempt that wrote it.
type keyCursor struct {
	seen    bool
	seq     int64
	attempt int64
}

// Analyse checks committed records (in commit order) against sources
// sequences of records each, spread over lanes keys per source.
func Analyse(committed []Entry, sources int, records int64, lanes int) Report {
	rep := Report{Sources: make([]SourceReport, sources)}
	l := int64(lanes)
	cursors := make([]keyCursor, int64(sources)*l)
	seen := make([][]bool, sources)
	for i := range seen {
		seen[i] = make([]bool, records)
	}
	for _, e := range committed {
		if e.Src < 0 || e.Src >= int64(sources) || e.Seq < 0 || e.Seq >= records {
			rep.Foreign++
			continue
		}
		sr := &rep.Sources[e.Src]
		sr.Committed++
		if e.Flag != FlagNone {
			sr.Flagged++
		}
		if seen[e.Src][e.Seq] {
			sr.Duplicates++
		}
		seen[e.Src][e.Seq] = true
		c := &cursors[keyOf(e.Src, e.Seq, l)]
		want := e.Seq % l
		if c.seen {
			want = c.seq + l
		}
		if e.Seq != want {
			sr.OutOfOrder++
			if e.Seq > want {
				sr.Gaps++
			}
			if c.seen && c.attempt == e.Attempt {
				sr.InAttemptDisorder++
			}
		}
		c.seen, c.seq, c.attempt = true, e.Seq, e.Attempt
	}
	for src := range seen {
		for _, ok := range seen[src] {
			if !ok {
				rep.Sources[src].Missing++
			}
		}
	}
	return rep
}

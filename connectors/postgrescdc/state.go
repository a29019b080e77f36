package postgrescdc

import (
	"fmt"

	"github.com/jackc/pglogrepl"
)

// stateName is the source's operator list state: one savedState element.
const stateName = "postgres-cdc-position"

// savedState is the source's position in a checkpoint.
type savedState struct {
	Slot string
	// StartLSN is the slot's consistent point when it was created: the
	// log replay after the snapshot starts here. Exported is the MVCC
	// snapshot PostgreSQL exported with the slot (pg_current_snapshot in
	// it): the transactions it sees are exactly those that committed
	// before StartLSN.
	StartLSN uint64
	Exported pgSnapshot
	// Tables is the snapshot's progress, in capture order.
	Tables    []tableProgress
	Streaming bool // the snapshot is done; the log is read
	// Done: every change of a transaction that committed before Done was
	// emitted (a Commit's end LSN, or a keepalive's WAL end read between
	// transactions). It is what a completed checkpoint lets the slot
	// confirm.
	Done uint64
	// PartialLSN and PartialN: the first PartialN changes of the
	// transaction whose commit LSN is PartialLSN were emitted too.
	PartialLSN uint64
	PartialN   int64
	// Planned: a parallel snapshot (WithSnapshotParallelism) planned
	// each table's key ranges (tableProgress.Bounds) and hands them to
	// the snapshot readers; the chunks read are then the readers' keyed
	// state, not Tables[].Chunks. Absent (false) in positions of the
	// parallelism-1 source, which therefore read as before.
	Planned bool
}

// tableProgress is one table's snapshot progress.
type tableProgress struct {
	Table    string // schema.name
	Chunks   []chunkState
	Finished bool // the last chunk (up to +∞) was read
	// Bounds and Assigned, for a planned (parallel) snapshot: range r of
	// the table holds the keys above Bounds[r-1] (all, for r = 0) up to
	// and including Bounds[r] (all, for r = len(Bounds)); ranges below
	// Assigned were handed to a reader before this position.
	Bounds   [][]keyVal
	Assigned int
}

// chunkState is one chunk read: the keys above the previous chunk's
// Upper (or all, for the first) up to and including Upper (or all, for
// the last chunk of a finished table), read in snapshot Snap, after
// which the WAL insert position was InsertLSN: every transaction Snap
// sees committed before InsertLSN.
type chunkState struct {
	Upper     []keyVal
	Snap      pgSnapshot
	InsertLSN uint64
	Rows      int64
}

// maxInsertLSN is the last InsertLSN of the snapshot: a transaction that
// committed after it is seen by no chunk, and the replay needs no
// chunk lookups from there on.
func (s *savedState) maxInsertLSN() uint64 {
	var m uint64
	for _, t := range s.Tables {
		for _, c := range t.Chunks {
			m = max(m, c.InsertLSN)
		}
	}
	return m
}

func parseLSN(s string) (uint64, error) {
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return 0, fmt.Errorf("LSN %q: %w", s, err)
	}
	return uint64(l), nil
}

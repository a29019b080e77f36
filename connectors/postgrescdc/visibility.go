package postgrescdc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// pgSnapshot is a PostgreSQL MVCC snapshot as pg_current_snapshot() prints
// it, "xmin:xmax:xip,…", with 64-bit transaction ids. It says which
// transactions a chunk read saw, so that the log replay can skip exactly
// their changes to that chunk's keys (see doc.go).
type pgSnapshot struct {
	Xmin, Xmax uint64
	Xip        []uint64 // in progress at the snapshot, sorted
}

func parseSnapshot(s string) (pgSnapshot, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: want xmin:xmax:xip", s)
	}
	var snap pgSnapshot
	var err error
	if snap.Xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: xmin: %w", s, err)
	}
	if snap.Xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: xmax: %w", s, err)
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return pgSnapshot{}, fmt.Errorf("snapshot %q: xip: %w", s, err)
			}
			snap.Xip = append(snap.Xip, v)
		}
	}
	slices.Sort(snap.Xip)
	return snap, nil
}

// full widens a 32-bit xid (what pgoutput's Begin carries) to the 64-bit
// id nearest to xmax: transactions that appear in the log while the
// snapshot still matters are within 2^31 of it (PostgreSQL's own
// wraparound rule).
func (s pgSnapshot) full(xid uint32) uint64 {
	d := int32(xid - uint32(s.Xmax))
	return uint64(int64(s.Xmax) + int64(d))
}

// visible reports whether the committed transaction xid had committed when
// the snapshot was taken, PostgreSQL's XidInMVCCSnapshot for a committed
// top-level transaction: below xmin it had; at or above xmax it had not
// started; in between, unless it was in progress.
func (s pgSnapshot) visible(xid uint32) bool {
	f := s.full(xid)
	if f < s.Xmin {
		return true
	}
	if f >= s.Xmax {
		return false
	}
	_, found := slices.BinarySearch(s.Xip, f)
	return !found
}

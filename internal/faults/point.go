package faults

import (
	"fmt"
	"strings"
)

// Point names a place in the runtime where a failure can be injected.
type Point string

// The fault points. Each is a crash point of the checkpoint protocol whose
// recovery path a test must exercise.
const (
	// Process fails while an operator processes a record.
	Process Point = "process-record"
	// SnapshotSync fails in the synchronous part of a snapshot, while the
	// task holds the barrier.
	SnapshotSync Point = "snapshot-sync"
	// SnapshotAsync fails while the snapshot is written in the background,
	// so the checkpoint is declined after the task moved on.
	SnapshotAsync Point = "snapshot-async"
	// AfterPreCommit fails after a two-phase-commit sink pre-committed its
	// transaction but before the checkpoint completed.
	AfterPreCommit Point = "after-precommit"
	// Commit fails while a sink commits a transaction of a completed
	// checkpoint, so the commit must be retried on recovery.
	Commit Point = "commit"
	// ChannelState fails while an unaligned checkpoint records in-flight
	// records as channel state (hit once per recorded batch). Only tasks
	// taking unaligned checkpoints reach it.
	ChannelState Point = "channel-state"
)

// AllPoints returns the fault points every checkpointing mode reaches, in a
// fixed order. ChannelState is not among them: aligned and at-least-once
// checkpoints never record channel state, so a test arming it there would
// wait for failures that cannot happen.
func AllPoints() []Point {
	return []Point{Process, SnapshotSync, SnapshotAsync, AfterPreCommit, Commit}
}

// knownPoints is AllPoints plus the mode-specific points.
func knownPoints() []Point { return append(AllPoints(), ChannelState) }

// ParsePoint checks a point name given by a user (a flag, a test script).
func ParsePoint(s string) (Point, error) {
	p := Point(strings.TrimSpace(s))
	if bit(p) == 0 {
		names := make([]string, 0, 5)
		for _, q := range knownPoints() {
			names = append(names, string(q))
		}
		return "", fmt.Errorf("unknown fault point %q: want one of %s", s, strings.Join(names, ", "))
	}
	return p, nil
}

// bit returns the point's bit in the armed mask, 0 for an unknown point. A
// switch rather than a map: Hit calls it per record.
func bit(p Point) uint32 {
	switch p {
	case Process:
		return 1 << 0
	case SnapshotSync:
		return 1 << 1
	case SnapshotAsync:
		return 1 << 2
	case AfterPreCommit:
		return 1 << 3
	case Commit:
		return 1 << 4
	case ChannelState:
		return 1 << 5
	}
	return 0
}

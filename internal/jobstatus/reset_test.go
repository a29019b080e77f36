package jobstatus

import (
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// TestJobStatusReset sets every atomic counter of a JobStatus (found by
// reflection, so a counter added later without a line in Reset fails
// here) and the monitor's fields, and checks that Reset clears them all.
func TestJobStatusReset(t *testing.T) {
	var s JobStatus
	v := reflect.ValueOf(&s).Elem()
	counters := 0
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if p, ok := v.Field(i).Addr().Interface().(*atomic.Int64); ok {
			p.Store(int64(i + 1))
			counters++
		}
	}
	if counters < 10 {
		t.Fatalf("found only %d atomic counters: the reflection is broken", counters)
	}
	r := RecorderOf(&s)
	r.SetFailure("boom")
	now := time.Now()
	r.SetState(StateFinished, now)
	r.CheckpointTriggered(3, 0, now)
	r.SetVertices([]VertexInfo{{ID: 1}}, 4)
	r.SetTaskSource(func() []TaskStats { return []TaskStats{{}} })

	r.Reset()

	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if p, ok := v.Field(i).Addr().Interface().(*atomic.Int64); ok && p.Load() != 0 {
			t.Errorf("%s = %d after Reset, want 0", v.Type().Field(i).Name, p.Load())
		}
	}
	if f := s.LastFailure(); f != "" {
		t.Errorf("LastFailure = %q after Reset", f)
	}
	if st := s.State(); st != StateCreated {
		t.Errorf("State = %s after Reset, want %s", st, StateCreated)
	}
	if start, end := s.Times(); !start.IsZero() || !end.IsZero() {
		t.Errorf("Times = %v, %v after Reset, want zero", start, end)
	}
	if h, vs, ts := s.Checkpoints(now), s.Vertices(), s.Tasks(); len(h) != 0 || len(vs) != 0 || len(ts) != 0 {
		t.Errorf("after Reset: %d checkpoints, %d vertices, %d tasks; want none", len(h), len(vs), len(ts))
	}
}

package barrier

import (
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// TestStepAllocations pins what a completed checkpoint costs in steady state:
// the Snapshot action is boxed into the Action interface (one allocation per
// checkpoint); Block, UnblockAll and the reused action slice cost nothing.
func TestStepAllocations(t *testing.T) {
	const n = 4
	for _, tc := range []struct {
		name string
		h    Handler
	}{
		{"aligned", NewAligned(n)},
		{"at-least-once", NewAtLeastOnce(n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Events are boxed up front: the task loop builds them, and
			// their cost is not the handler's.
			id := checkpoint.ID(0)
			evs := make([]Event, n)
			allocs := testing.AllocsPerRun(100, func() {
				id++
				for c := range evs {
					evs[c] = BarrierArrived{Channel: c, Barrier: checkpoint.Barrier{ID: id}}
				}
				// The boxing above is measured too; subtract it below.
				for _, ev := range evs {
					tc.h.Step(ev)
				}
			})
			boxing := testing.AllocsPerRun(100, func() {
				for c := range evs {
					evs[c] = BarrierArrived{Channel: c, Barrier: checkpoint.Barrier{ID: id}}
				}
			})
			if got := allocs - boxing; got != 1 {
				t.Fatalf("%v allocations per checkpoint beyond the events, want 1 (the Snapshot)", got)
			}
		})
	}
}

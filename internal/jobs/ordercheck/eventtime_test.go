package ordercheck_test

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// TestEventTimeUnalignedUnderBackpressureAndFaults is the order check with
// event time: records carry their seq as timestamp with monotonous
// watermarks, so watermarks travel in every channel between the records
// that barriers overtake, and the check stage sets an event-time timer per
// record. Unaligned (pure and alternating) checkpoints under full
// backpressure, failures at every point including the recording of channel
// state: the committed output must be exactly-once and in order as without
// event time, no record may reach the check stage at or behind its
// watermark (a restored watermark ahead of replayed in-flight records),
// and no timer may fire twice, out of order or ahead of the watermark.
func TestEventTimeUnalignedUnderBackpressureAndFaults(t *testing.T) {
	modes := []struct {
		name    string
		timeout string
		p       int
	}{
		{"unaligned", "0", 2},
		{"alternating", "1ms", 3},
	}
	points := append(faults.AllPoints(), faults.ChannelState)
	const records = 6_000 // per source subtask
	for i, m := range modes {
		t.Run(fmt.Sprintf("%s/p%d", m.name, m.p), func(t *testing.T) {
			r := newRun(t, m.p, records)
			r.opts.EventTime = true
			r.opts.SinkRate = 12_000
			r.plan = faultPlan(faultFailures, int64(41*m.p+i), int64(m.p)*records, points...)
			res := r.executeWith(t, map[string]string{
				config.CheckpointingUnaligned:      "true",
				config.CheckpointingAlignedTimeout: m.timeout,
				config.AutoWatermarkInterval:       "2ms",
			})
			checkRun(t, r, res, faultFailures)
			logRun(t, res)
			checkExactlyOnce(t, r, res)
			late, timerRegressions, timers := r.opts.Store.EventTimeFlags()
			if late != 0 {
				t.Errorf("%d records reached the check stage at or behind its watermark", late)
			}
			if timerRegressions != 0 {
				t.Errorf("%d event-time timers fired twice, out of order or ahead of the watermark", timerRegressions)
			}
			if want := int64(m.p) * records; timers < want {
				t.Errorf("%d timers fired over all attempts, want at least one per record (%d)", timers, want)
			}
			var persisted int64
			for _, c := range res.samples.checkpoints {
				persisted = max(persisted, c.PersistedInFlightBytes)
			}
			if persisted == 0 {
				t.Errorf("no completed checkpoint persisted in-flight data: the barriers overtook nothing")
			}
			t.Logf("timers fired %d, largest persisted in-flight data %d bytes, channel state replayed %d bytes",
				timers, persisted, hooks.Plan(res.env).Status.RestoredChannelStateBytes.Load())
		})
	}
}

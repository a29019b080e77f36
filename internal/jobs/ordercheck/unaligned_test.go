package ordercheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// TestUnalignedUnderBackpressureAndFaults is the order check for unaligned
// checkpoints, pure and alternating (aligned with a 1 ms timeout, so most
// checkpoints switch to unaligned while the sink holds the pipeline
// back). Failures hit every fault point, including while channel state is
// recorded; restores replay the recorded in-flight records before any new
// input. Exactly-once must hold as in aligned mode: every key's committed
// sequence complete, in order, once.
func TestUnalignedUnderBackpressureAndFaults(t *testing.T) {
	modes := []struct {
		name    string
		timeout string
	}{
		{"unaligned", "0"},
		{"alternating", "1ms"},
	}
	points := append(faults.AllPoints(), faults.ChannelState)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var replayed int64
			fromCheckpoint, restarts := 0, 0
			firedAt := map[faults.Point]int{}
			for p := 1; p <= 3; p++ {
				t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
					r := faultRun(t, p, config.ModeExactlyOnce)
					r.plan = faultPlan(faultFailures, int64(37*p+len(m.name)), int64(p)*faultRecords, points...)
					res := r.executeWith(t, map[string]string{
						config.CheckpointingUnaligned:      "true",
						config.CheckpointingAlignedTimeout: m.timeout,
					})
					checkRun(t, r, res, faultFailures)
					if t.Failed() {
						// A restart no injected failure explains is the bug to
						// look at: show its cause.
						for _, line := range strings.Split(res.log.String(), "\n") {
							if strings.Contains(line, "restarting") && !strings.Contains(line, "injected") {
								t.Logf("unexpected failure: %.2000s", line)
							}
						}
					}
					logRun(t, res)
					checkExactlyOnce(t, r, res)
					replayed += hooks.Plan(res.env).Status.RestoredChannelStateBytes.Load()
					for _, f := range res.inj.Log() {
						firedAt[f.Point]++
					}
					fromCheckpoint += strings.Count(res.log.String(), "msg=restoring")
					restarts += int(hooks.Plan(res.env).Status.Restarts.Load())
					t.Logf("channel state replayed: %d bytes", hooks.Plan(res.env).Status.RestoredChannelStateBytes.Load())
				})
			}
			if t.Failed() {
				return
			}
			// Restores that replay no channel state would test nothing
			// this mode adds.
			if replayed == 0 {
				t.Errorf("no restore replayed channel state over all runs")
			}
			if firedAt[faults.ChannelState] == 0 {
				t.Errorf("no failure fired while recording channel state (fired: %v): pick seeds that cover it", firedAt)
			}
			if 2*fromCheckpoint < restarts {
				t.Errorf("only %d of %d restarts restored a checkpoint", fromCheckpoint, restarts)
			}
		})
	}
}

package ordercheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// TestRemoteChannelsUnderBackpressureAndFaults is the order check over
// remote channels: local mode runs 2 or 3 TaskManagers, each with its own
// data plane on loopback, and subtask i runs on TaskManager i mod n, so
// every rebalance and hash exchange between subtasks on different
// TaskManagers crosses TCP, encoded, under credit-based flow control. In
// aligned, unaligned and alternating mode, with failures at every fault
// point (snapshotting and channel-state recording included) under a sink
// far slower than the sources, the committed output must be every key's
// sequence exactly once and in order.
//
// So that it cannot pass without testing what it claims: records must have
// crossed TCP (RemoteBytesSent), and in the unaligned modes channel state
// must have been recorded from remote channels' serialized batches and
// restored for channels whose producer runs on another TaskManager.
func TestRemoteChannelsUnderBackpressureAndFaults(t *testing.T) {
	modes := []struct {
		name      string
		unaligned bool
		timeout   string
		tms       int
	}{
		{"aligned", false, "", 2},
		{"unaligned", true, "0", 3},
		{"alternating", true, "1ms", 2},
	}
	points := append(faults.AllPoints(), faults.ChannelState)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			const p = 3
			r := faultRun(t, p, config.ModeExactlyOnce)
			r.opts.Records = faultRecords * 2 / 3
			r.plan = faultPlan(faultFailures, int64(41*m.tms+len(m.name)), int64(p)*r.opts.Records, points...)
			extra := map[string]string{config.LocalTaskManagers: fmt.Sprint(m.tms)}
			if m.unaligned {
				extra[config.CheckpointingUnaligned] = "true"
				extra[config.CheckpointingAlignedTimeout] = m.timeout
			}
			res := r.executeWith(t, extra)
			checkRun(t, r, res, faultFailures)
			if t.Failed() {
				for _, line := range strings.Split(res.log.String(), "\n") {
					if strings.Contains(line, "restarting") && !strings.Contains(line, "injected") {
						t.Logf("unexpected failure: %.2000s", line)
					}
				}
			}
			logRun(t, res)
			checkExactlyOnce(t, r, res)
			st := hooks.Plan(res.env).Status
			sent, recorded, restored := st.RemoteBytesSent.Load(), st.RecordedRemoteChannelStateBytes.Load(), st.RestoredRemoteChannelStateBytes.Load()
			t.Logf("%d TaskManagers: %d bytes crossed TCP; channel state from remote channels: %d bytes recorded, %d bytes restored (all channels: %d)",
				m.tms, sent, recorded, restored, st.RestoredChannelStateBytes.Load())
			if sent == 0 {
				t.Errorf("no record crossed TCP: the run did not exercise remote channels")
			}
			if m.unaligned && (recorded == 0 || restored == 0) {
				t.Errorf("unaligned over remote channels recorded %d and restored %d bytes of their channel state, want both > 0", recorded, restored)
			}
			// Alternating: alignment timeouts must have made remote
			// producers send queued barriers ahead of their data.
			if prio := st.RemotePrioritizedBarriers.Load(); m.timeout == "1ms" && prio == 0 {
				t.Errorf("no alignment timeout prioritized a barrier queued at a remote producer")
			} else {
				t.Logf("%d barriers prioritized at remote producers", prio)
			}
		})
	}
}

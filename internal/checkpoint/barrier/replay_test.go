package barrier

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestReplayOrder runs the scripts in testdata_replay: Unaligned driven
// through the model gate of the random test (urun), with the task's
// recording done as the actions say, and then a restore from the channel
// state. Commands:
//
//	new channels=<n> [timeout=<duration>]   pure unaligned, or alternating
//	data ch=<c> n=<k>                       the producer sends k data buffers
//	barrier ch=<c> id=<n> [priority=true]   ... then a barrier (ts = id seconds)
//	eop ch=<c>                              ... then its end of partition
//	poll [ch=<c>] [times=<k>]               the task polls: the first priority
//	                                        item of any channel if there is one,
//	                                        else channel c (or the first
//	                                        unblocked channel with input)
//	announce ch=<c>                         the gate announces c's next barrier
//	timeout id=<n>                          the alignment timer of n fires
//	restore id=<n>                          a failure now; restore checkpoint n
//
// Every event command prints what the task polled, the handler's actions
// and its state. restore prints, per channel, the data processed before
// the snapshot, the recorded channel state, and what the restored task
// processes: the replay, then what the producer sends again (the data after
// its barrier). It fails unless that sequence, after the data processed
// before the snapshot, is every data buffer of the channel exactly once and
// in order: the channel-state replay order.
func TestReplayOrder(t *testing.T) {
	datadriven.Walk(t, "testdata_replay", func(t *testing.T, path string) {
		var r *urun
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				n := coretest.MustInt(t, d, "channels")
				timeout := coretest.Dur(t, d, "timeout", 0)
				r = &urun{
					t: t, timeout: timeout, n: n, h: NewUnaligned(n, timeout),
					q: make([][]gitem, n), total: make([]uint64, n), polled: make([]uint64, n),
					ended: make([]bool, n), blocked: make([]bool, n), kinds: map[checkpoint.ID]checkpoint.Kind{},
					armed: map[checkpoint.ID]bool{}, delivered: map[checkpoint.ID]map[int]uint64{},
					states: map[checkpoint.ID]*recorder{},
				}
				return state(r.h, n)
			}
			if r == nil {
				d.Fatalf(t, "the script must start with new")
			}
			ch := coretest.Int(t, d, "ch", -1)
			id := checkpoint.ID(coretest.Int(t, d, "id", 0))
			switch d.Cmd {
			case "data":
				for range coretest.MustInt(t, d, "n") {
					r.total[ch]++
					r.q[ch] = append(r.q[ch], gitem{seq: r.total[ch]})
				}
				return fmt.Sprintf("ch%d: data up to %d\n", ch, r.total[ch])
			case "barrier":
				prio := false
				d.MaybeScanArgs(t, "priority", &prio)
				b := checkpoint.Barrier{ID: id, Timestamp: time.Unix(int64(id), 0)}
				r.q[ch] = append(r.q[ch], gitem{seq: r.total[ch], priority: prio, ev: BarrierArrived{Channel: ch, Barrier: b}})
				return fmt.Sprintf("ch%d: barrier %d after data %d\n", ch, id, r.total[ch])
			case "eop":
				r.q[ch] = append(r.q[ch], gitem{seq: r.total[ch], ev: EndOfPartition{Channel: ch}})
				return fmt.Sprintf("ch%d: end of partition after data %d\n", ch, r.total[ch])
			case "poll":
				times := 1
				d.MaybeScanArgs(t, "times", &times)
				var b strings.Builder
				for range times {
					c, ok := pickScripted(r, ch)
					if !ok {
						b.WriteString("nothing to poll\n")
						break
					}
					b.WriteString(r.scriptedPoll(c))
				}
				return b.String() + state(r.h, r.n)
			case "announce":
				for i, it := range r.q[ch] {
					if _, ok := it.ev.(BarrierArrived); ok && !it.priority && !it.announced {
						return r.scriptedPoll(choice{ch: ch, idx: i, announce: true}) + state(r.h, r.n)
					}
				}
				d.Fatalf(t, "channel %d has no barrier to announce", ch)
			case "timeout":
				return r.scriptedStep(AlignmentTimeout{ID: id}) + state(r.h, r.n)
			case "restore":
				return r.restore(t, id)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// pickScripted chooses what the model gate hands the task: a priority item
// first, as the real gate's priority section does, else channel want (or
// the first unblocked channel with input).
func pickScripted(r *urun, want int) (choice, bool) {
	for c, q := range r.q {
		for i, it := range q {
			if it.priority {
				return choice{ch: c, idx: i}, true
			}
		}
	}
	for c, q := range r.q {
		if len(q) > 0 && !r.blocked[c] && (want < 0 || want == c) {
			return choice{ch: c}, true
		}
	}
	return choice{}, false
}

// scriptedPoll polls one item and renders it with the actions it caused.
func (r *urun) scriptedPoll(c choice) string {
	it := r.q[c.ch][c.idx]
	var what string
	switch {
	case c.announce:
		what = fmt.Sprintf("announcement of %v", it.ev.(BarrierArrived).Barrier.ID)
	case it.ev == nil:
		what = fmt.Sprintf("data %d", it.seq)
		if r.rec != nil && r.rec.on[c.ch] {
			what += " (recorded)"
		}
	default:
		what = fmt.Sprintf("%T", it.ev)
		if b, ok := it.ev.(BarrierArrived); ok {
			what = fmt.Sprintf("barrier %d", b.Barrier.ID)
			if it.priority {
				what += fmt.Sprintf(" (priority, overtook %d data)", c.idx)
			}
		}
	}
	start := len(r.hist)
	r.poll(c)
	return fmt.Sprintf("ch%d: %s\n", c.ch, what) + actionLines(r.hist[start:])
}

// scriptedStep steps one event and renders the actions.
func (r *urun) scriptedStep(ev Event) string {
	start := len(r.hist)
	r.step(ev)
	return actionLines(r.hist[start:])
}

// actionLines keeps the action lines of a history slice.
func actionLines(hist []string) string {
	var b strings.Builder
	for _, h := range hist {
		if a, ok := strings.CutPrefix(h, "  -> "); ok {
			b.WriteString("  " + a + "\n")
		}
	}
	return b.String()
}

// restore prints and checks what a task restored from checkpoint id's
// channel state processes on each channel.
func (r *urun) restore(t *testing.T, id checkpoint.ID) string {
	rec := r.states[id]
	if rec == nil {
		t.Fatalf("checkpoint %d has no completed channel state", id)
	}
	var b strings.Builder
	for c := range r.n {
		cut, delivered := r.delivered[id][c]
		if !delivered {
			cut = r.total[c] // the channel ended before its barrier
		}
		var resent []uint64
		for s := cut + 1; s <= r.total[c]; s++ {
			resent = append(resent, s)
		}
		fmt.Fprintf(&b, "ch%d: processed 1..%d, channel state %v, producer resends %v\n", c, rec.before[c], rec.data[c], resent)
		seen := make([]uint64, 0, r.total[c])
		for s := uint64(1); s <= rec.before[c]; s++ {
			seen = append(seen, s)
		}
		seen = append(append(seen, rec.data[c]...), resent...)
		var want []uint64
		for s := uint64(1); s <= r.total[c]; s++ {
			want = append(want, s)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("channel %d after restoring %d: the task processes %v, want every data buffer once, in order: %v", c, id, seen, want)
		}
	}
	return b.String()
}

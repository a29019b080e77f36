package barrier

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestDataDriven runs the scripts in testdata. Commands:
//
//	new channels=<n> mode=aligned|at-least-once|unaligned|alternating [max-tracked=<k>] [timeout=<duration>]
//	barrier ch=<c> id=<n> [kind=final|savepoint] [priority=true] [ts=<ms>]
//	announce ch=<c> id=<n> [kind=final|savepoint] [ts=<ms>]
//	timeout id=<n>
//	cancel ch=<c> id=<n>
//	eop ch=<c>
//	abort id=<n>
//
// ts is the barrier's timestamp in milliseconds since the Unix epoch. Each
// event command prints the returned actions, one a line, and then the
// handler's state: the pending checkpoint and the blocked channels, and for
// Unaligned also the phase and the recording channels. Adding
// panics=true to an event command expects Step to panic and prints the
// message. Regenerate the expectations with go test -rewrite.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h Handler
		n := 0
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				var mode string
				d.ScanArgs(t, "channels", &n)
				d.ScanArgs(t, "mode", &mode)
				switch mode {
				case "aligned":
					h = NewAligned(n)
				case "at-least-once":
					a := NewAtLeastOnce(n)
					d.MaybeScanArgs(t, "max-tracked", &a.maxTracked)
					h = a
				case "unaligned":
					h = NewUnaligned(n, 0)
				case "alternating":
					h = NewUnaligned(n, coretest.MustDur(t, d, "timeout"))
				default:
					d.Fatalf(t, "unknown mode %q; use aligned, at-least-once, unaligned or alternating", mode)
				}
				return state(h, n)
			}
			if h == nil {
				d.Fatalf(t, "run new before %s", d.Cmd)
			}
			ev := parseEvent(t, d)
			var panics bool
			d.MaybeScanArgs(t, "panics", &panics)
			return step(t, d, h, n, ev, panics)
		})
	})
}

func parseEvent(t *testing.T, d *datadriven.TestData) Event {
	var ch int
	var id int64
	switch d.Cmd {
	case "barrier":
		d.ScanArgs(t, "ch", &ch)
		var priority bool
		d.MaybeScanArgs(t, "priority", &priority)
		return BarrierArrived{Channel: ch, Barrier: parseBarrier(t, d), Priority: priority}
	case "announce":
		d.ScanArgs(t, "ch", &ch)
		return BarrierAnnounced{Channel: ch, Barrier: parseBarrier(t, d)}
	case "timeout":
		d.ScanArgs(t, "id", &id)
		return AlignmentTimeout{ID: checkpoint.ID(id)}
	case "cancel":
		d.ScanArgs(t, "ch", &ch)
		d.ScanArgs(t, "id", &id)
		return CancelArrived{Channel: ch, ID: checkpoint.ID(id)}
	case "eop":
		d.ScanArgs(t, "ch", &ch)
		return EndOfPartition{Channel: ch}
	case "abort":
		d.ScanArgs(t, "id", &id)
		return AbortRequested{ID: checkpoint.ID(id)}
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return nil
}

func parseBarrier(t *testing.T, d *datadriven.TestData) checkpoint.Barrier {
	var id, ts int64
	d.ScanArgs(t, "id", &id)
	b := checkpoint.Barrier{ID: checkpoint.ID(id)}
	if d.MaybeScanArgs(t, "ts", &ts) {
		b.Timestamp = time.UnixMilli(ts)
	}
	var kind string
	d.MaybeScanArgs(t, "kind", &kind)
	switch kind {
	case "":
	case "final":
		b.Kind = checkpoint.Final
	case "savepoint":
		b.Kind = checkpoint.Savepoint
	default:
		d.Fatalf(t, "unknown kind %q; use final or savepoint", kind)
	}
	return b
}

func step(t *testing.T, d *datadriven.TestData, h Handler, n int, ev Event, wantPanic bool) (out string) {
	defer func() {
		r := recover()
		switch {
		case r != nil && wantPanic:
			out = fmt.Sprintf("panic: %v\n%s", r, state(h, n))
		case r != nil:
			panic(r)
		case wantPanic:
			d.Fatalf(t, "expected a panic")
		}
	}()
	var b strings.Builder
	for _, a := range h.Step(ev) {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	b.WriteString(state(h, n))
	return b.String()
}

// state renders the handler's observable state after a step.
func state(h Handler, n int) string {
	var b strings.Builder
	if id, ok := h.Pending(); ok {
		fmt.Fprintf(&b, "pending=%d", id)
	} else {
		b.WriteString("pending=none")
	}
	u, unaligned := h.(*Unaligned)
	if unaligned {
		fmt.Fprintf(&b, " phase=%s", u.Phase())
	}
	channelSet(&b, "blocked", n, h.Blocked)
	if unaligned {
		channelSet(&b, "recording", n, u.Recording)
	}
	b.WriteString("\n")
	return b.String()
}

// channelSet renders " name=[c ...]" for the channels in = true.
func channelSet(b *strings.Builder, name string, n int, in func(int) bool) {
	fmt.Fprintf(b, " %s=[", name)
	sep := ""
	for ch := range n {
		if in(ch) {
			fmt.Fprintf(b, "%s%d", sep, ch)
			sep = " "
		}
	}
	b.WriteString("]")
}

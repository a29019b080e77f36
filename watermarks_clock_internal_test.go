package weir

import (
	"context"

	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil/clocktest"
	"github.com/weirstream/weir/internal/watermark"
)

// wmTrace records what a generation sends downstream.
type wmTrace struct{ wm int64 }

func (w *wmTrace) EmitWatermark(_ context.Context, wm int64) error { w.wm = wm; return nil }
func (w *wmTrace) MarkIdle(context.Context) error                  { return nil }
func (w *wmTrace) MarkActive(context.Context) error                { return nil }

// TestWatermarkIdlenessClockJump (fault class 14): a split's idleness is
// measured on the monotonic clock. Split a reads nothing after its first
// record while split b keeps reading; the wall clock steps ±1 h. A step
// forward must not make a idle at once (its next records would be late:
// the output would jump to b's watermark), a step back must not keep it
// active for an hour (the output would stall at a's watermark). Time
// passing is Add on the clock's values.
func TestWatermarkIdlenessClockJump(t *testing.T) {
	const idle = time.Second
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.New()
			s := ForBoundedOutOfOrderness[int64](0).WithTimestampAssigner(func(v, _ int64) int64 { return v }).WithIdleness(idle)
			g := generation[int64]{s: s}
			core, err := watermark.NewSource(watermark.SourceConfig{IdleTimeout: idle,
				NewGenerator: func() watermark.Generator { return watermark.BoundedOutOfOrderness(0) }}, watermark.MinWatermark)
			if err != nil {
				t.Fatal(err)
			}
			out := &wmTrace{wm: watermark.MinWatermark}
			g.core, g.known, g.out = core, map[string]*customGen[int64]{}, out
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			t0 := clk.Now()
			_, err = g.records(ctx, "a", []int64{10}, nil)
			must(err)
			_, err = g.records(ctx, "b", []int64{20}, nil)
			must(err)
			must(g.tick(ctx, t0))
			for i := 1; i <= 5; i++ { // b reads on, a is quiet; the clock steps after the second tick
				if i == 3 {
					clk.Jump(jump)
				}
				_, err = g.records(ctx, "b", []int64{20 + int64(i)*10}, nil)
				must(err)
				now := shiftWallOf(clk, t0.Add(time.Duration(i)*100*time.Millisecond))
				must(g.tick(ctx, now))
				if out.wm != 9 {
					t.Fatalf("tick %d, %d ms after a's last record, %s step: watermark %d, want 9 (a is not idle before %s)", i, i*100, jump, out.wm, idle)
				}
			}
			_, err = g.records(ctx, "b", []int64{100}, nil)
			must(err)
			must(g.tick(ctx, shiftWallOf(clk, t0.Add(idle+100*time.Millisecond))))
			if out.wm != 99 {
				t.Fatalf("%s after a's last record, %s step: watermark %d, want 99 (a idle, b's watermark)", idle+100*time.Millisecond, jump, out.wm)
			}
		})
	}
}

// shiftWallOf is t as the stepped clock would read it: t's monotonic
// reading, its wall reading moved by the clock's jumps so far.
func shiftWallOf(clk *clocktest.Clock, t time.Time) time.Time {
	return clocktest.ShiftWall(t, clk.Offset())
}

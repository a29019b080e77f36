package nats

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
)

type lineCount struct{ n *atomic.Int64 }

func (c lineCount) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (c lineCount) Write(_ context.Context, b []int64) error {
	c.n.Add(int64(len(b)))
	return nil
}
func (c lineCount) Flush(context.Context) error { return nil }
func (c lineCount) Close(context.Context) error { return nil }

type countOf struct{}

func (countOf) CreateAccumulator() int64   { return 0 }
func (countOf) Add(_ int64, a int64) int64 { return a + 1 }
func (countOf) Result(a int64) int64       { return a }
func (countOf) Merge(a, b int64) int64     { return a + b }

// TestPerSplitWatermarks: with FromSourceWithWatermarks the NATS source
// generates watermarks per subject split, so a split whose times lag far
// behind another's holds event time back and none of its records is
// late; with one watermark for the whole subtask (timestamps assigned
// after the source) many are. The deserializer also checks that every
// message carries the server's storage time (Msg.Time), which a
// timestamp assigner may use instead of a time in the payload.
func TestPerSplitWatermarks(t *testing.T) {
	const n = 400
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "WM", Subjects: []string{"wm.>"}})
	for sub, start := range map[string]int64{"a": 1_000_000, "b": 0} {
		for i := range n {
			if _, err := js.Publish(context.Background(), "wm."+sub, []byte(strconv.FormatInt(start+int64(i)*10, 10))); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := time.Now().Add(-time.Minute)
	parse := func(m *Msg) (int64, error) {
		if m.Time.Before(before) || m.Time.After(time.Now()) {
			return 0, fmt.Errorf("message %d has storage time %v", m.Sequence, m.Time)
		}
		return strconv.ParseInt(string(m.Data), 10, 64)
	}
	for _, perSplit := range []bool{true, false} {
		t.Run(map[bool]string{true: "per split", false: "per subtask"}[perSplit], func(t *testing.T) {
			j := newJob(t, 1)
			j.restartNone = true
			j.extra = map[string]string{"pipeline.auto-watermark-interval": "0"}
			late, windowed := &atomic.Int64{}, &atomic.Int64{}
			o := j.run(t, func(env *weir.Env) {
				src := Source(ts.url, "WM", parse, WithBounded(), WithSubjects("wm.a", "wm.b"))
				ws := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
				var s weir.Stream[int64]
				if perSplit {
					s = weir.FromSourceWithWatermarks(env, src, ws)
				} else {
					s = weir.AssignTimestampsAndWatermarks(weir.FromSource(env, src), ws)
				}
				tag := weir.NewOutputTag[int64]("late")
				w := weir.Window(weir.KeyBy(s, func(int64) int64 { return 0 }), weir.TumblingEventTimeWindows(time.Second)).SideOutputLateData(tag)
				counts := weir.AggregateWindow(w, weir.AggregateFunction[int64, int64, int64](countOf{}))
				weir.SinkTo(weir.SideOutput(counts, tag), func() weir.Sink[int64] { return lineCount{late} })
				weir.SinkTo(weir.FlatMap(counts, func(c int64, out *weir.Collector[int64]) error {
					for range c {
						out.Collect(c)
					}
					return nil
				}), func() weir.Sink[int64] { return lineCount{windowed} })
			})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.log)
			}
			if got := late.Load() + windowed.Load(); got != 2*n {
				t.Fatalf("%d records counted in windows and %d late: want %d in all", windowed.Load(), late.Load(), 2*n)
			}
			if perSplit && late.Load() != 0 {
				t.Fatalf("%d records late with per-split watermarks", late.Load())
			}
			if !perSplit && late.Load() == 0 {
				t.Fatalf("no record late with one watermark for both splits: the test does not show what per-split watermarks prevent")
			}
		})
	}
}

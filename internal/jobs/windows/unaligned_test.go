package windows_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// pace passes lines on at most rate per second per subtask: the slow
// stage that backpressures the windows and, through them, the source.
type pace struct {
	rate    float64
	start   time.Time
	emitted int64
}

func (p *pace) Open(context.Context, *weir.KeyedContext[string]) error {
	p.start, p.emitted = time.Now(), 0
	return nil
}

func (p *pace) ProcessElement(l string, _ *weir.KeyedContext[string], out *weir.Collector[string]) error {
	for float64(p.emitted) > time.Since(p.start).Seconds()*p.rate {
		time.Sleep(time.Millisecond)
	}
	p.emitted++
	out.Collect(l)
	return nil
}

// buildPaced is windows.Build with a paced stage between the windows and
// their file sink, across a keyed exchange (so the windows' output waits
// for credit).
func buildPaced(rate float64) func(*weir.Env, windows.Options) {
	return func(env *weir.Env, o windows.Options) {
		lines, late := windows.Pipeline(env, o)
		paced := weir.Process(weir.KeyBy(lines, func(l string) string { return l }),
			func() weir.KeyedProcessFunction[string, string, string] { return &pace{rate: rate} }).Name("pace").UID("pace")
		text := func(v string, dst []byte) []byte { return append(dst, v...) }
		weir.SinkToTransactional(paced, file.ExactlyOnce(o.Out, text)).Name("files").UID("files")
		weir.SinkToTransactional(late, file.ExactlyOnce(filepath.Join(o.Out, "late"), text)).Name("late-files").UID("late-files")
	}
}

// TestWindowsUnalignedUnderBackpressureAndFaults runs the windows job with
// unaligned checkpoints (pure, and alternating: aligned with a 1 ms
// timeout) while a slow stage after the windows backpressures the whole
// pipeline, so barriers overtake records and watermarks queued in the
// channels, and failures hit every fault point including the recording of
// channel state. The committed output must be exactly the closed form;
// checkpoints with persisted in-flight data must have completed and
// restores must have replayed channel state, or the test proves nothing
// about unaligned checkpoints.
func TestWindowsUnalignedUnderBackpressureAndFaults(t *testing.T) {
	type tcase struct {
		mode    string
		timeout string
		p       int
		backend string
		// channelOnly fails only while channel state is recorded, so
		// that point surely fires; the other cases draw from all.
		channelOnly bool
	}
	cases := []tcase{{"unaligned", "0", 1, "heap", false}, {"unaligned", "0", 2, "heap", true}, {"unaligned", "0", 3, "heap", false}, {"alternating", "1ms", 2, "heap", false}}
	if *long {
		cases = append(cases, tcase{"unaligned", "0", 2, "lsm", false}, tcase{"alternating", "1ms", 3, "lsm", true}, tcase{"alternating", "1ms", 1, "heap", false})
	}
	const n, failures = 2000, 4
	var persisted, replayed int64
	unaligned, fromCheckpoint, restarts := 0, 0, 0
	firedAt := map[faults.Point]int{}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/p%d/%s/channel-only=%v", c.mode, c.p, c.backend, c.channelOnly), func(t *testing.T) {
			o := smallOptions(t, "tumble:20", n)
			// The source is rate-limited too: unthrottled, it fills the
			// channels in a few milliseconds, and failures drawn early in
			// the run then fire before the first checkpoint, attempt after
			// attempt. The slow stage takes fewer lines per second than
			// the source makes, so backpressure builds all the same.
			o.Rate = 3_000
			r := newFRun(t, o, c.p, c.backend)
			r.build = buildPaced(1_500 / float64(c.p))
			r.sample = true
			r.extra = map[string]string{
				config.CheckpointingUnaligned:      "true",
				config.CheckpointingAlignedTimeout: c.timeout,
				config.AutoWatermarkInterval:       "5ms",
				// Small batches and two credits (FaultConfig's) per
				// channel: little is in flight before the producers block.
				config.BatchSize: "16",
			}
			points := append(faults.AllPoints(), faults.ChannelState)
			if c.channelOnly {
				points = []faults.Point{faults.ChannelState}
			}
			r.plan = faultPlan(failures, int64(53*i+c.p), n, points...)
			res := r.execute(t, context.Background(), nil)
			checkFailures(t, res, failures)
			if err := windows.Verify(r.o, res.lines, res.late); err != nil {
				t.Fatalf("committed output differs from the failure-free closed form: %v\nfired: %v", err, res.inj.Log())
			}
			if os.Getenv("WDBG") != "" {
				t.Logf("LOG %s", res.log)
			}
			for _, f := range res.inj.Log() {
				firedAt[f.Point]++
			}
			persisted += res.persisted
			replayed += res.replayed
			unaligned += res.unaligned
			fromCheckpoint += res.restored
			restarts += int(res.stats.Restarts)
			t.Logf("exact: %s; %d unaligned checkpoints seen, largest persisted in-flight data %d bytes, %d bytes of channel state replayed; fired %v",
				res.summary(), res.unaligned, res.persisted, res.replayed, res.inj.Log())
		})
	}
	if t.Failed() {
		return
	}
	if unaligned == 0 || persisted == 0 {
		t.Errorf("%d completed unaligned checkpoints seen, the largest persisting %d bytes of in-flight data: the pipeline was not backpressured enough to test unaligned checkpoints", unaligned, persisted)
	}
	if 3*fromCheckpoint < restarts {
		t.Errorf("only %d of %d restarts restored a checkpoint", fromCheckpoint, restarts)
	}
	if replayed == 0 {
		t.Errorf("no restore replayed channel state over all runs")
	}
	if firedAt[faults.ChannelState] == 0 {
		t.Errorf("no failure fired while recording channel state (fired: %v): pick seeds that cover it", firedAt)
	}
}

package weir_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// TestWeakProcessingTimeWindowsReplay: a window task restarted alone in
// WEAKLY_CONSISTENT mode is replayed what its failed attempt read, and
// must put each record into the processing-time window the failed
// attempt did, or the windows whose results its output log already
// holds (and skips) lose records to later windows that count them again.
// The processing time its operators read is the time logged with each
// buffer it polled, and its round robin to the sink's subtasks restarts
// where its snapshot left it, so the windows' counts sum to the input
// exactly, with nothing counted lost or duplicated. (Without either, most
// runs miscount by a few records; the failures land after the first
// snapshots, at 50 ms, and chunks of 4 records make the round robin turn.)
func TestWeakProcessingTimeWindowsReplay(t *testing.T) {
	const n = 6000
	var replayed int64
	for run := range 6 {
		p := 1 + run%2
		t.Run(fmt.Sprintf("p%d/run%d", p, run), func(t *testing.T) {
			env, log := newEnv(testConfig(t, p, "50ms", config.CheckpointingMode, config.ModeWeak, config.BatchSize, "4"))
			calls, fired := &atomic.Int64{}, &atomic.Int64{}
			src := weir.FromSource(env, datagen.New(func(i int64) tsEvent { return tsEvent{I: i, K: i % 5} }, datagen.WithCount(n), datagen.WithRate(20000)))
			w := weir.Window(weir.KeyBy(src, func(e tsEvent) int64 { return e.K }), weir.TumblingProcessingTimeWindows(time.Millisecond))
			counts := weir.Map(weir.ProcessWindow(w, func() weir.ProcessWindowFunction[int64, tsEvent, int] { return failingSize{calls, fired} }), func(c int) string { return fmt.Sprint(c) })
			// The sink runs in its own task: the window task's output crosses
			// logs, which drop what a restarted producer emits again by its
			// position in each channel. At p2 the round robin must send each
			// record again to the channel it went to before.
			out := sinkLines(t, weir.Rebalance(counts.UID("c")))
			execute(t, env, log)
			total := 0
			for _, l := range committed(t, out) {
				var c int
				fmt.Sscan(l, &c)
				total += c
			}
			ws := &hooks.Plan(env).Status.Weak
			t.Logf("weak failover: %d failures, %d task restarts, %d replayed, %d lost, %d duplicated; windows counted %d records",
				ws.Failures.Load(), ws.TaskRestarts.Load(), ws.Replayed.Load(), ws.Lost.Load(), ws.Duplicated.Load(), total)
			if ws.Lost.Load() != 0 || ws.Duplicated.Load() != 0 {
				t.Fatalf("the logs were large enough, yet %d lost and %d possibly duplicated were counted", ws.Lost.Load(), ws.Duplicated.Load())
			}
			if total != n {
				t.Fatalf("processing-time windows counted %d records of %d after restarts with nothing counted lost or duplicated", total, n)
			}
			if f, r := ws.Failures.Load(), ws.TaskRestarts.Load(); f != fired.Load() || r != f {
				t.Fatalf("%d failures and %d task restarts, want one each for the %d planned failures that fired\nlog:\n%s", f, r, fired.Load(), log)
			}
			replayed += ws.Replayed.Load()
		})
	}
	if !t.Failed() && replayed == 0 {
		t.Errorf("no restarted window task was replayed anything: the test exercised no replay")
	}
}

// failAtCall are the window function's calls, counted over every attempt
// of every subtask, that fail their task.
var failAtCall = map[int64]bool{300: true, 700: true, 1100: true}

// failingSize counts a window's records, failing its task at the calls
// in failAtCall.
type failingSize struct{ calls, fired *atomic.Int64 }

func (f failingSize) Process(_ int64, _ *weir.WindowContext, es []tsEvent, out *weir.Collector[int]) error {
	if c := f.calls.Add(1); failAtCall[c] {
		f.fired.Add(1)
		return fmt.Errorf("planned failure at window call %d", c)
	}
	out.Collect(len(es))
	return nil
}

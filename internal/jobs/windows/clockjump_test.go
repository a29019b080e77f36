package windows_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/testutil/clocktest"
)

// Fault class 14, clock jumps. The runtime reads one clock (JobConfig.Now,
// injected through hooks.Plan(env).Now): processing time is its wall
// reading, every timeout and interval a difference of its values on the
// monotonic reading. clocktest steps the wall reading by ±1 h mid-run and
// leaves the monotonic one alone, as settimeofday does.

func clockConfig(t *testing.T, p int, interval string) *weir.Config {
	t.Helper()
	cfg := weir.NewConfig()
	for _, kv := range [][2]string{
		{config.ParallelismDefault, fmt.Sprint(p)},
		{config.CheckpointsDir, filepath.Join(t.TempDir(), "state")},
		{config.CheckpointingInterval, interval},
		{config.BatchSize, "128"},
		{config.RestartStrategyType, config.RestartNone},
	} {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// TestWindowsClockJump runs the event-time windows job at parallelism 2
// and steps the wall clock +1 h, or -1 h, after its third completed
// checkpoint: the committed output is exactly the closed form (the output
// of a run without a jump), nothing is late, and checkpoints keep their
// interval across the step: no two triggers closer than the interval (no
// storm after +1 h) and checkpoints keep completing after it (no stall
// after -1 h). The checkpoints' trigger timestamps show the step: the
// JobMaster read the injected clock.
func TestWindowsClockJump(t *testing.T) {
	const interval = 100 * time.Millisecond
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			o := windows.Options{Events: 24000, Keys: 23, Window: spec(t, "tumble:500"), MaxDisorder: 200, OutOfOrderness: -1, Rate: 8000}
			o.Defaults()
			o.Out = filepath.Join(t.TempDir(), "out")
			clk := clocktest.New()
			env := weir.NewEnv(weir.WithConfig(clockConfig(t, 2, interval.String())))
			hooks.Plan(env).Now = clk.Now
			windows.Build(env, o)
			st := hooks.Plan(env).Status
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			job, err := env.Start(ctx, "windows")
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu      sync.Mutex
				trigger = map[int64]time.Time{} // completed checkpoints' trigger times
				jumpAt  time.Time               // real time.Now at the step
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					mu.Lock()
					for _, c := range st.Checkpoints(time.Now()) {
						if c.Status == jobstatus.CheckpointCompleted {
							trigger[int64(c.ID)] = c.TriggerTime
						}
					}
					if jumpAt.IsZero() && len(trigger) >= 3 {
						jumpAt = time.Now()
						clk.Jump(jump)
					}
					mu.Unlock()
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			err = job.Wait()
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("job: %v", err)
			}
			lines, err := file.ReadCommitted(o.Out)
			if err != nil {
				t.Fatal(err)
			}
			late, err := file.ReadCommitted(filepath.Join(o.Out, "late"))
			if err != nil {
				t.Fatal(err)
			}
			if len(late) != 0 {
				t.Fatalf("%d events late after a %s step of the wall clock, e.g. %q", len(late), jump, late[0])
			}
			if err := windows.Verify(o, lines, late); err != nil {
				t.Fatalf("output after a %s step of the wall clock: %v", jump, err)
			}
			if jumpAt.IsZero() {
				t.Fatalf("the job ended before its third checkpoint completed (%d): no step was made", len(trigger))
			}
			ids := make([]int64, 0, len(trigger))
			for id := range trigger {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			after, shifted := 0, 0
			var maxGap time.Duration
			for i, id := range ids {
				tt := trigger[id]
				if tt.After(jumpAt) {
					after++
					// The wall reading of the trigger time against the
					// real wall clock at that moment (monotonic offset
					// from the step).
					if off := tt.UnixMilli() - jumpAt.Add(tt.Sub(jumpAt)).UnixMilli(); off == jump.Milliseconds() {
						shifted++
					}
				}
				if i == 0 {
					continue
				}
				gap := tt.Sub(trigger[ids[i-1]])
				maxGap = max(maxGap, gap)
				// (The last is the final checkpoint, triggered when the input
				// ends, not by the interval.)
				if ids[i-1] == id-1 && i < len(ids)-1 && gap < interval*9/10 {
					t.Errorf("checkpoints %d and %d triggered %s apart, less than the interval %s: a storm", id-1, id, gap, interval)
				}
			}
			if after < 3 {
				t.Errorf("%d checkpoints completed after the %s step, want at least 3: a stall", after, jump)
			}
			if shifted == 0 {
				t.Errorf("no checkpoint after the step has a trigger timestamp %s off the real wall clock: the JobMaster did not read the injected clock", jump)
			}
			if maxGap > 3*time.Second {
				t.Errorf("%s between two completed checkpoints (interval %s): a stall", maxGap, interval)
			}
			t.Logf("%d lines exact; %d checkpoints completed, %d after the %s step (%d of them stamped with the stepped wall clock), largest gap %s",
				len(lines), len(ids), after, jump, shifted, maxGap.Round(time.Millisecond))
		})
	}
}

// heldSource emits keys 0..n-1 once, then nothing until release closes,
// then ends: the job stays running (processing-time timers fire only
// before the end of input) while the test steps the clock.
type heldSource struct {
	n       int64
	next    int64
	release <-chan struct{}
}

func (s *heldSource) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *heldSource) SnapshotState(int64) error                        { return nil }
func (s *heldSource) Close(context.Context) error                      { return nil }
func (s *heldSource) Read(ctx context.Context, dst []int64, max int) ([]int64, error) {
	for s.next < s.n && len(dst) < max {
		dst = append(dst, s.next)
		s.next++
	}
	if len(dst) > 0 {
		return dst, nil
	}
	select {
	case <-s.release:
		return dst, io.EOF
	case <-ctx.Done():
		return dst, ctx.Err()
	case <-time.After(2 * time.Millisecond):
		return dst, nil
	}
}

// firing is one processing-time timer that fired.
type firing struct {
	key, ts, now int64     // the timer's time and CurrentProcessingTime in OnTimer
	at           time.Time // real time.Now
}

// ptRecorder is what the processing-time functions report to the test.
type ptRecorder struct {
	delay      int64 // ms from an element's processing time to its timer
	registered atomic.Int64
	mu         sync.Mutex
	fired      []firing
}

func (r *ptRecorder) firings() []firing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.fired)
}

// ptFn registers one processing-time timer per element at its processing
// time + delay and records each firing.
type ptFn struct{ r *ptRecorder }

func (f *ptFn) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }

func (f *ptFn) ProcessElement(_ int64, kc *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	kc.RegisterProcessingTimeTimer(kc.CurrentProcessingTime() + f.r.delay)
	f.r.registered.Add(1)
	return nil
}

func (f *ptFn) OnTimer(ts int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if kc.TimeDomain() != weir.ProcessingTime {
		return errors.New("an event-time timer in the processing-time test")
	}
	f.r.mu.Lock()
	f.r.fired = append(f.r.fired, firing{key: kc.CurrentKey(), ts: ts, now: kc.CurrentProcessingTime(), at: time.Now()})
	f.r.mu.Unlock()
	out.Collect(fmt.Sprint(kc.CurrentKey()))
	return nil
}

type discard struct{}

func (discard) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard) Write(context.Context, []string) error            { return nil }
func (discard) Flush(context.Context) error                      { return nil }
func (discard) Close(context.Context) error                      { return nil }

// startTimersJob starts a job whose keys 0..keys-1 each register one
// processing-time timer delay after their processing time, with the
// injected clock clk and the checkpoint interval, and waits until all are registered. Closing the
// returned channel ends the input.
func startTimersJob(t *testing.T, clk *clocktest.Clock, keys int64, delay time.Duration, interval string) (*weir.Job, *ptRecorder, chan struct{}) {
	t.Helper()
	rec := &ptRecorder{delay: delay.Milliseconds()}
	release := make(chan struct{})
	env := weir.NewEnv(weir.WithConfig(clockConfig(t, 2, interval)))
	hooks.Plan(env).Now = clk.Now
	src := weir.FromSource(env, func() weir.Source[int64] { return &heldSource{n: keys, release: release} }).Name("held").UID("held")
	out := weir.Process(weir.KeyBy(src, func(k int64) int64 { return k }),
		func() weir.KeyedProcessFunction[int64, int64, string] { return &ptFn{r: rec} }).Name("timers").UID("timers")
	weir.SinkTo(out, func() weir.Sink[string] { return discard{} }).Name("discard").UID("discard")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	job, err := env.Start(ctx, "pt-timers")
	if err != nil {
		t.Fatal(err)
	}
	// Each of the 2 source subtasks emits every key: 2 timers per key,
	// registered on one key, so they coalesce to at most 2 timers per key
	// (one per registration time in ms).
	deadline := time.Now().Add(30 * time.Second)
	for rec.registered.Load() < 2*keys {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d elements processed", rec.registered.Load(), 2*keys)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return job, rec, release
}

// waitFirings waits up to d for at least n firings.
func waitFirings(rec *ptRecorder, n int, d time.Duration) []firing {
	deadline := time.Now().Add(d)
	for {
		f := rec.firings()
		if len(f) >= n || time.Now().After(deadline) {
			return f
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkOnce requires every key 0..keys-1 to have fired, each timer once,
// none before its time by the processing clock.
func checkOnce(t *testing.T, f []firing, keys int64) {
	t.Helper()
	type timer struct{ key, ts int64 }
	seen := map[timer]int{}
	perKey := map[int64]int{}
	for _, x := range f {
		seen[timer{x.key, x.ts}]++
		perKey[x.key]++
		if x.now < x.ts {
			t.Errorf("timer %d of key %d fired at processing time %d, before its time", x.ts, x.key, x.now)
		}
	}
	for tm, n := range seen {
		if n != 1 {
			t.Errorf("timer %d of key %d fired %d times", tm.ts, tm.key, n)
		}
	}
	for k := range keys {
		if perKey[k] == 0 {
			t.Errorf("key %d: no timer fired", k)
		}
	}
}

// TestProcessingTimersClockJumpForward: timers 1 h away fire once, within
// about a second (processingTimerPoll), when the wall clock steps +1 h
// past them, not when the wait computed before the step would end.
func TestProcessingTimersClockJumpForward(t *testing.T) {
	const keys = 8
	clk := clocktest.New()
	// No checkpoint in the test's time: no trigger wakes the idle task.
	job, rec, release := startTimersJob(t, clk, keys, 30*time.Minute, "1h")
	time.Sleep(300 * time.Millisecond) // the task goes idle, waiting for the timers
	if f := rec.firings(); len(f) != 0 {
		t.Fatalf("%d timers 30 min away fired before the step", len(f))
	}
	jumpAt := time.Now()
	clk.Jump(time.Hour)
	f := waitFirings(rec, keys, 10*time.Second)
	if len(f) < keys {
		t.Fatalf("%d timers fired in 10 s after the wall clock stepped 1 h past them, want at least %d", len(f), keys)
	}
	// Whatever fires fires together: allow the stragglers of the same
	// firing, then look for duplicates.
	time.Sleep(300 * time.Millisecond)
	f = rec.firings()
	var latest time.Duration
	for _, x := range f {
		latest = max(latest, x.at.Sub(jumpAt))
	}
	checkOnce(t, f, keys)
	if latest > 3*time.Second {
		t.Errorf("the last timer fired %s after the step, want within about 1 s", latest)
	}
	close(release)
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d timers fired, the last %s after the +1h step", len(f), latest.Round(time.Millisecond))
}

// TestProcessingTimersClockJumpBack: after the wall clock steps back 1 h,
// timers wait until the wall clock reaches their time again (here: until
// it steps forward again), then fire once each: none is lost, none fires
// early by the processing clock.
func TestProcessingTimersClockJumpBack(t *testing.T) {
	const keys = 8
	const delay = 1500 * time.Millisecond
	clk := clocktest.New()
	job, rec, release := startTimersJob(t, clk, keys, delay, "100ms")
	clk.Jump(-time.Hour)
	time.Sleep(delay + time.Second) // past the timers on the monotonic clock
	if f := rec.firings(); len(f) != 0 {
		t.Fatalf("%d timers fired after the wall clock stepped back 1 h before their time", len(f))
	}
	jumpAt := time.Now()
	clk.Jump(time.Hour)
	waitFirings(rec, keys, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // duplicates would come now
	f := rec.firings()
	checkOnce(t, f, keys)
	var latest time.Duration
	for _, x := range f {
		latest = max(latest, x.at.Sub(jumpAt))
	}
	if latest > 3*time.Second {
		t.Errorf("the last timer fired %s after the wall clock reached it again, want within about 1 s", latest)
	}
	close(release)
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if s := job.Stats(); s.CompletedCheckpoints < 5 {
		t.Errorf("%d checkpoints completed in a run of several seconds at a 100 ms interval across two steps of the wall clock", s.CompletedCheckpoints)
	}
	t.Logf("%d timers fired once each, the last %s after the wall clock reached them again", len(f), latest.Round(time.Millisecond))
}

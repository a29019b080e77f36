package weir_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// stepSource emits 0..n-1 at a rate that depends on the position: slow,
// then 4× faster between fastFrom and fastTo, then slow again. Its
// position is operator state.
type stepSource struct {
	n, fastFrom, fastTo int64
	slow                int
	next                int64
	pos                 *weir.OperatorList[int64]
	// stepped, if set, is closed when the fast phase starts.
	stepped chan struct{}
	// last and credit pace by elapsed time, so that a loaded machine's
	// late timers do not lower the rate.
	last   time.Time
	credit float64
}

func (s *stepSource) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	for _, v := range s.pos.Get() {
		s.next = v
	}
	return err
}

func (s *stepSource) Read(ctx context.Context, dst []int64, limit int) ([]int64, error) {
	if s.next >= s.n {
		return dst, io.EOF
	}
	rate := s.slow
	if s.next >= s.fastFrom && s.next < s.fastTo {
		rate *= 4
	}
	select {
	case <-ctx.Done():
		return dst, ctx.Err()
	case <-time.After(10 * time.Millisecond):
	}
	now := time.Now()
	if s.last.IsZero() {
		s.last = now.Add(-10 * time.Millisecond)
	}
	// At most 100 ms of credit: a source held back by backpressure does
	// not burst afterwards.
	s.credit = min(s.credit+now.Sub(s.last).Seconds()*float64(rate), float64(rate)/10)
	s.last = now
	for n := min(limit, int(s.credit)); n > 0 && s.next < s.n; n-- {
		s.credit--
		if s.next == s.fastFrom && s.stepped != nil {
			close(s.stepped)
		}
		dst = append(dst, s.next)
		s.next++
	}
	return dst, nil
}

func (s *stepSource) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *stepSource) Close(context.Context) error { return nil }

// costly counts records per key, taking cost per record (sleeping, so
// that a subtask's capacity is 1/cost whatever the machine's cores).
type costly struct {
	cost time.Duration
	n    weir.ValueState[int64]
}

func (f *costly) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.n, err = weir.GetValueState[int64](kc, "n")
	return err
}

func (f *costly) ProcessElement(v int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	time.Sleep(f.cost)
	c, _ := f.n.Value()
	c++
	f.n.Update(c)
	out.Collect(fmt.Sprintf("%d,%d", kc.CurrentKey(), c))
	return nil
}

// TestAutoscaler runs a keyed operator whose subtasks each process about
// 1,000 records/s behind a source whose rate steps from 400/s up 4× for
// 6 s and back down for 12 s (long enough for a scale-down on a loaded
// machine). The autoscaler (short windows) must scale the operator up
// during the fast phase and down after it, carry each decision out in
// place, not flap, and the output must be exactly the failure-free one.
func TestAutoscaler(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 30 s")
	}
	const n, fastFrom, fastTo, k = 15_600, 1_200, 10_800, 13
	env, log := newEnv(testConfig(t, 1, "200ms",
		"job.autoscaler.enabled", "true",
		"job.autoscaler.interval", "500ms",
		"job.autoscaler.metrics.window", "3s",
		"job.autoscaler.stabilization.interval", "1500ms",
		"job.autoscaler.scale-down.interval", "4s",
		"execution.buffer-timeout.interval", "10ms"))
	stepped := make(chan struct{})
	src := weir.FromSource(env, func() weir.Source[int64] {
		// One subtask; a restore before the step gets the channel again
		// and a restore after it resumes past fastFrom.
		return &stepSource{n: n, fastFrom: fastFrom, fastTo: fastTo, slow: 400, stepped: stepped}
	}).UID("src").Parallelism(1)
	keyed := weir.KeyBy(src, func(i int64) int64 { return i % k })
	lines := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, string] {
		return &costly{cost: time.Millisecond}
	}).UID("count")
	out := sinkLines(t, lines)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	st := hooks.Plan(env).Status
	keepsUp := make(chan [2]time.Duration, 1)
	go func() { keepsUp <- watchCatchUp(ctx, st, stepped) }()
	if err := env.Execute(ctx, "autoscaled"); err != nil {
		t.Fatalf("job: %v\nlog:\n%s", err, log)
	}
	cancel()
	if d := <-keepsUp; d[1] > 0 {
		t.Logf("after the 4× step: scaled up in %v, kept up (backlog under 0.25 s of input) %v after the step", d[0].Round(10*time.Millisecond), d[1].Round(10*time.Millisecond))
	} else {
		t.Logf("after the 4× step: scaled up in %v, did not keep up before the step back", d[0].Round(10*time.Millisecond))
	}
	on, decisions := st.Autoscaler()
	var ups, downs int
	var trail []string
	for _, d := range decisions {
		for _, v := range d.Vertices {
			if v.ID == "count" && d.Rescale && d.Error == "" && v.To != v.From {
				trail = append(trail, fmt.Sprintf("%d→%d", v.From, v.To))
				if v.To > v.From {
					ups++
				} else {
					downs++
				}
			}
		}
	}
	t.Logf("autoscaler: %d rescales %v", st.AutoscalerRescales.Load(), trail)
	if !on || ups == 0 || downs == 0 || ups+downs > 4 {
		var why strings.Builder
		for _, d := range decisions {
			fmt.Fprintf(&why, "%s rescale=%v %s", d.At.Format("15:04:05.000"), d.Rescale, d.Reason)
			for _, v := range d.Vertices {
				fmt.Fprintf(&why, " [%s in=%.0f busy=%.2f bp=%.2f util=%.2f: %s]", v.ID, v.In, v.Busy, v.Backpressure, v.Utilization, v.Why)
			}
			why.WriteString("\n")
		}
		t.Errorf("autoscaler on %v: %d scale-ups, %d scale-downs (%v): want at least one of each, at most 4 in all\ndecisions:\n%s", on, ups, downs, trail, why.String())
	}
	want := make([]string, 0, n)
	count := map[int64]int64{}
	for i := int64(0); i < n; i++ {
		count[i%k]++
		want = append(want, fmt.Sprintf("%d,%d", i%k, count[i%k]))
	}
	sameMultiset(t, want, committed(t, out))
}

// watchCatchUp samples the job every 20 ms from the source's step up on:
// how long until the keyed vertex ran at more than 1 subtask, and how
// long until, after that, its backlog (records the source emitted that
// it has not taken yet, in the current attempt) fell under a quarter
// second of the fast input (400 records), judged once the attempt at
// the new parallelism read a second of it. Zero for what did not happen.
func watchCatchUp(ctx context.Context, st *jobstatus.JobStatus, stepped <-chan struct{}) (d [2]time.Duration) {
	select {
	case <-stepped:
	case <-ctx.Done():
		return d
	}
	at := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return d
		case <-tick.C:
		}
		var src, in int64
		par := 0
		for _, ts := range st.Tasks() {
			if strings.Contains(ts.Name, "Source") || strings.Contains(ts.Name, "src") {
				src += ts.RecordsOut
				continue
			}
			in += ts.RecordsIn
			par++
		}
		if par > 1 && d[0] == 0 {
			d[0] = time.Since(at)
		}
		// Counters restart with each attempt: judge the backlog once the
		// new one has read a second of the fast input.
		if d[0] > 0 && src > 1600 && src-in < 400 {
			d[1] = time.Since(at)
			return d
		}
	}
}

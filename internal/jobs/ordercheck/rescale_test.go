package ordercheck_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/ordercheck"
)

// TestUnalignedRescaleInPlace rescales the order-check job in place while
// its slow sink holds the pipeline back and every checkpoint is
// unaligned: the checkpoints the rescales redeploy from hold records in
// flight, which the restore redistributes to the new subtasks (by key
// group on the hash edges). Exactly-once must hold as without a rescale:
// every key's committed sequence complete, in order, once, and the check
// stage never sees a gap or a regression in its keyed state, which it
// would if a redistributed record went to a subtask that does not own
// its key or came after a newer record of its key.
func TestUnalignedRescaleInPlace(t *testing.T) {
	r := newRun(t, 2, 50_000)
	r.opts.SinkRate = 10_000
	r.interval = "50ms"
	res, pauses := rescaleRun(t, r, true, []int{3, 1})
	tot := res.report.Total()
	if tot.Missing != 0 || tot.Gaps != 0 || tot.InAttemptDisorder != 0 || res.report.Foreign != 0 {
		t.Errorf("committed output lost or reordered records: %v", res.report)
	}
	if want := int64(r.opts.Sources) * r.opts.Records; tot.Committed != want {
		t.Errorf("committed %d records, want %d", tot.Committed, want)
	}
	checkExactlyOnce(t, r, res)
	// Without records in flight at the rescales this would test nothing
	// the aligned rescale does not.
	st := hooks.Plan(res.env).Status
	if st.RestoredChannelStateBytes.Load() == 0 {
		t.Errorf("no rescale restored channel state: the sink should hold the pipeline back")
	}
	t.Logf("%v, %d checkpoints, %d bytes of channel state replayed over both rescales, pauses %v", res.elapsed.Round(time.Millisecond), st.CompletedCheckpoints.Load(), st.RestoredChannelStateBytes.Load(), pauses)
}

// BenchmarkRescaleUnderBackpressure measures the pause of an in-place
// rescale (2 -> 3 of the keyed stages and the sink, from the call until
// the job runs at 3) of the order-check job whose slow sink holds full
// network buffers (1,024-record batches, 4 credits per channel) back,
// with aligned and with unaligned checkpoints, in the same run. An
// aligned checkpoint's barrier waits behind the queued records; an
// unaligned one overtakes them, and the restore redistributes them.
//
//	go test -run '^$' -bench RescaleUnderBackpressure -benchtime 1x ./internal/jobs/ordercheck/
func BenchmarkRescaleUnderBackpressure(b *testing.B) {
	for _, unaligned := range []bool{false, true} {
		name := "aligned"
		if unaligned {
			name = "unaligned"
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				r := newRun(b, 2, 200_000)
				r.opts.SinkRate = 20_000
				r.batch, r.credits = 1024, 4
				r.interval = "1s"
				_, pauses := rescaleRun(b, r, unaligned, []int{3})
				total += pauses[0]
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "pause-ms")
		})
	}
}

// rescaleRun starts r's job with checkpoints aligned or unaligned (no
// alignment timeout), rescales the keyed stages and the sink chained to
// the last one in place to each parallelism in turn (the sources stay),
// waits for the end and analyses the committed output. It returns each
// rescale's pause: from the call until the job runs at the new
// parallelism.
func rescaleRun(t testing.TB, r *run, unaligned bool, to []int) (result, []time.Duration) {
	t.Helper()
	extra := map[string]string{}
	if unaligned {
		extra[config.CheckpointingUnaligned] = "true"
		extra[config.CheckpointingAlignedTimeout] = "0"
	}
	env := weir.NewEnv(weir.WithConfig(r.config(t, extra)))
	res := result{env: env, log: &syncBuffer{}}
	hooks.Plan(env).Logger = slog.New(slog.NewTextHandler(res.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := ordercheck.Build(env, r.opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	done := make(chan samples)
	go func() { done <- sample(env, r.opts.Store, stop) }()
	start := time.Now()
	job, err := env.Start(ctx, "ordercheck")
	if err != nil {
		t.Fatal(err)
	}
	st := hooks.Plan(env).Status
	var pauses []time.Duration
	for _, p := range to {
		time.Sleep(1500 * time.Millisecond)
		at := time.Now()
		var id int64
		for {
			id, err = job.Rescale(ctx, weir.Rescale{Vertices: map[string]int{"check": p, "pass": p, "slow-sink": p}})
			if !errors.Is(err, weir.ErrNotRunning) || ctx.Err() != nil {
				break
			}
			if s := st.State(); s == "FAILED" || s == "CANCELED" || s == "FINISHED" {
				t.Fatalf("rescale to %d: the job is %s\nlog:\n%.20000s", p, s, res.log)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("rescale to %d: %v\nlog:\n%s", p, err, res.log)
		}
		for !runsAt(env, "check", p) {
			if ctx.Err() != nil {
				t.Fatalf("not running at %d after the rescale on checkpoint %d\nlog:\n%s", p, id, res.log)
			}
			time.Sleep(time.Millisecond)
		}
		pauses = append(pauses, time.Since(at).Round(time.Millisecond))
	}
	res.err = job.Wait()
	res.elapsed = time.Since(start)
	close(stop)
	res.samples = <-done
	res.report = ordercheck.Analyse(r.opts.Store.Committed(), r.opts.Sources, r.opts.Records, r.opts.Lanes)
	if res.err != nil {
		t.Fatalf("job: %v\nlog:\n%s", res.err, res.log)
	}
	return res, pauses
}

// runsAt reports whether the vertex whose name contains name runs at
// parallelism p.
func runsAt(env *weir.Env, name string, p int) bool {
	st := hooks.Plan(env).Status
	if st.State() != "RUNNING" {
		return false
	}
	for _, v := range st.Vertices() {
		if strings.Contains(v.Name, name) && v.Parallelism == p {
			return true
		}
	}
	return false
}

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
	cfg := r.config(t, map[string]string{
		config.CheckpointingUnaligned:      "true",
		config.CheckpointingAlignedTimeout: "0",
		config.CheckpointingInterval:       "50ms",
	})
	env := weir.NewEnv(weir.WithConfig(cfg))
	res := result{env: env, log: &syncBuffer{}}
	hooks.Plan(env).Logger = slog.New(slog.NewTextHandler(res.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := ordercheck.Build(env, r.opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
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
	// The keyed stages and the sink chained to the last one; the sources
	// stay at 2.
	for _, p := range []int{3, 1} {
		time.Sleep(1500 * time.Millisecond)
		before := st.RestoredChannelStateBytes.Load()
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
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("rescaled to %d on checkpoint %d: %d bytes of channel state replayed", p, id, st.RestoredChannelStateBytes.Load()-before)
	}
	res.err = job.Wait()
	res.elapsed = time.Since(start)
	close(stop)
	res.samples = <-done
	res.report = ordercheck.Analyse(r.opts.Store.Committed(), r.opts.Sources, r.opts.Records, r.opts.Lanes)
	if res.err != nil {
		t.Fatalf("job: %v\nlog:\n%s", res.err, res.log)
	}
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
	if st.RestoredChannelStateBytes.Load() == 0 {
		t.Errorf("no rescale restored channel state: the sink should hold the pipeline back")
	}
	t.Logf("%v, %d checkpoints, %d bytes of channel state replayed over both rescales", res.elapsed.Round(time.Millisecond), st.CompletedCheckpoints.Load(), st.RestoredChannelStateBytes.Load())
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

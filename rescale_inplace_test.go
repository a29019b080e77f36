package weir_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// TestRescaleInPlace rescales a running job twice (1 → 3 → 2) while it
// reads, with every keyed state kind, timers and the exactly-once file
// sink, on both state backends, with and without injected failures: the committed output must be
// exactly the closed-form output of allStates, and the job must have
// run at the parallelism asked for after each rescale.
func TestRescaleInPlace(t *testing.T) {
	const n, k = 6_000, 17
	want := expectedAllStates(n, k)
	for _, c := range []struct {
		backend   string
		failures  int
		unaligned bool
	}{{"heap", 0, false}, {"heap", 2, false}, {"lsm", 0, false}, {"lsm", 2, false}, {"heap", 2, true}} {
		backend, failures := c.backend, c.failures
		name := fmt.Sprintf("%s/failures%d", backend, failures)
		extra := []string{"state.backend.type", backend}
		if c.unaligned {
			name += "/unaligned"
			extra = append(extra, "execution.checkpointing.unaligned.enabled", "true")
		}
		t.Run(name, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 1, "50ms", extra...))
			var inj *faults.Injector
			if failures > 0 {
				inj = injector(env, failures, 7, n, faults.AllPoints()...)
			}
			gen := func(i int64) event { return event{I: i, Key: i % k} }
			src := weir.FromSource(env, datagen.New(gen, datagen.WithCount(n), datagen.WithRate(2_000))).UID("src").Parallelism(1)
			keyed := weir.KeyBy(src, func(e event) int64 { return e.Key })
			lines := weir.Process(keyed, func() weir.KeyedProcessFunction[int64, event, string] {
				return &allStates{last: n - 1, delay: 5, fired: new(atomic.Int64)}
			}).UID("states")
			out := sinkLines(t, lines)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			job, err := env.Start(ctx, "rescale")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []int{3, 2} {
				time.Sleep(700 * time.Millisecond)
				id, err := rescaleRunning(ctx, job, weir.Rescale{Parallelism: p})
				if err != nil {
					t.Fatalf("rescale to %d: %v\nlog:\n%s", p, err, log)
				}
				deadline := time.Now().Add(30 * time.Second)
				for !runsAt(env, "KeyedProcess", p) {
					if time.Now().After(deadline) {
						t.Fatalf("not running at parallelism %d 30 s after the rescale on checkpoint %d: %+v\nlog:\n%s", p, id, hooks.Plan(env).Status.Vertices(), log)
					}
					time.Sleep(5 * time.Millisecond)
				}
				// The pause is reported once every task of the new
				// deployment runs; an injected failure may have taken the
				// rescale's place.
				for failures == 0 {
					r := hooks.Plan(env).Status.LastRescale()
					if r != nil && int64(r.Checkpoint) == id && r.Pause > 0 && strings.Contains(log.String(), "rescaled in place: running at the new parallelism") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("rescale to %d on checkpoint %d: last rescale %+v, want it with its pause, and logged", p, id, r)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err := job.Wait(); err != nil {
				t.Fatalf("job: %v\nlog:\n%s", err, log)
			}
			if inj != nil && inj.Fired() == 0 {
				t.Errorf("none of %d failures fired", failures)
			}
			sameMultiset(t, want, committed(t, out))
		})
	}
}

// rescaleRunning rescales job once it runs (it may be restarting after
// an injected failure).
func rescaleRunning(ctx context.Context, job *weir.Job, r weir.Rescale) (int64, error) {
	for {
		id, err := job.Rescale(ctx, r)
		if !errors.Is(err, weir.ErrNotRunning) || ctx.Err() != nil {
			return id, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runsAt reports whether the vertex whose name contains name runs at
// parallelism p with all its subtasks reporting.
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

package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
)

// split is one independently resumable range [Next, End) of the index
// space: the unit of work a rescalable source keeps in operator list
// state, so that on a change of parallelism the runtime may deal the
// splits out round-robin and every index is still read exactly once.
type split struct{ ID, Next, End int64 }

// splitSource reads numSplits equal splits of [0, n); on a fresh start
// subtask s takes the splits s, s+p, …; after a restore it takes what the
// runtime hands it. Each Read returns at most 32 records and then pauses
// for pause, which paces the source so that a test can cancel it midway.
type splitSource struct {
	n, numSplits int64
	pause        time.Duration
	state        *weir.OperatorList[split]
	splits       []split
}

func (s *splitSource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	st, err := weir.GetOperatorListState[split](rc, "splits")
	if err != nil {
		return err
	}
	s.state = st
	if rc.Restored() {
		s.splits = append([]split(nil), st.Get()...)
		return nil
	}
	size := s.n / s.numSplits
	for id := int64(rc.Subtask()); id < s.numSplits; id += int64(rc.Parallelism()) {
		end := (id + 1) * size
		if id == s.numSplits-1 {
			end = s.n
		}
		s.splits = append(s.splits, split{ID: id, Next: id * size, End: end})
	}
	return nil
}

func (s *splitSource) Read(ctx context.Context, dst []int64, max int) ([]int64, error) {
	max = min(max, 32)
	for i := range s.splits {
		sp := &s.splits[i]
		for sp.Next < sp.End && max > 0 {
			dst = append(dst, sp.Next)
			sp.Next++
			max--
		}
	}
	for _, sp := range s.splits {
		if sp.Next < sp.End {
			if s.pause > 0 {
				time.Sleep(s.pause) // pacing, like datagen's rate limit
			}
			return dst, nil
		}
	}
	return dst, io.EOF
}

func (s *splitSource) SnapshotState(int64) error {
	s.state.Update(s.splits)
	return nil
}

func (s *splitSource) Close(context.Context) error { return nil }

// TestRescaleOperatorStateAndSink stops a run after a few checkpoints
// and resumes it at another parallelism: the source's splits (operator
// list state) are redistributed round-robin, and so are the exactly-once
// sink's pending transactions. The first run stops either by cancellation
// or by a failure injected right before a sink subtask commits (restart
// strategy none), which leaves a pre-committed transaction of a completed
// checkpoint for the rescaled run to commit. Every index must be committed
// exactly once.
func TestRescaleOperatorStateAndSink(t *testing.T) {
	for _, c := range []struct {
		from, to int
		stop     string
	}{{2, 3, "cancel"}, {3, 2, "cancel"}, {3, 1, "cancel"}, {2, 3, "commit-failure"}, {3, 2, "commit-failure"}, {3, 1, "commit-failure"}} {
		t.Run(fmt.Sprintf("%s/%d->%d", c.stop, c.from, c.to), func(t *testing.T) {
			const n = 20_000
			cfg := testConfig(t, c.from, "5ms")
			out := t.TempDir()
			build := func(p int, pause time.Duration) (*weir.Env, *syncBuffer) {
				if err := cfg.Set("parallelism.default", fmt.Sprint(p)); err != nil {
					t.Fatal(err)
				}
				env, log := newEnv(cfg)
				src := weir.FromSource(env, func() weir.Source[int64] {
					return &splitSource{n: n, numSplits: 12, pause: pause}
				}).UID("src")
				strs := weir.Map(src, func(v int64) string { return fmt.Sprint(v) }).UID("fmt")
				sinkInto(strs, out)
				return env, log
			}
			if c.stop == "commit-failure" {
				if err := cfg.Set("restart-strategy.type", "none"); err != nil {
					t.Fatal(err)
				}
				env1, log1 := build(c.from, 100*time.Microsecond)
				inj := injector(env1, 1, 2, n/2, faults.Commit)
				err := env1.Execute(t.Context(), "test")
				if !errors.Is(err, faults.ErrInjected) || inj.Fired() != 1 {
					t.Fatalf("first run: %v, want the injected commit failure\nlog:\n%s", err, log1)
				}
				if err := cfg.Set("restart-strategy.type", "fixed-delay"); err != nil {
					t.Fatal(err)
				}
			} else {
				env1, log1 := build(c.from, 200*time.Microsecond)
				cancelAfterCheckpoints(t, env1, log1, 3)
			}
			firstLines := len(committed(t, out))
			env2, log2 := build(c.to, 0)
			execute(t, env2, log2)
			if !strings.Contains(log2.String(), "msg=restoring") {
				t.Fatalf("the second run did not restore:\n%s", log2)
			}
			var want []string
			for v := range int64(n) {
				want = append(want, fmt.Sprint(v))
			}
			sameMultiset(t, want, committed(t, out))
			t.Logf("first run committed %d lines; resumed at parallelism %d", firstLines, c.to)
		})
	}
}

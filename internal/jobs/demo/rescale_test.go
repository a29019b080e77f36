package demo_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestRescaleOnRestore cancels a run after some checkpoints and resumes it
// from the newest one at another parallelism: keyed state is redistributed
// by key group, the datagen positions (union state) tell each new subtask
// which of its indexes the old owners had emitted, and the 2PC sink's
// pending transactions go to the subtasks that inherit them. The committed
// output must be exactly that of a run without rescaling, as the issue
// asks for 2->3, 3->2 and 4->1 (and 1->4).
func TestRescaleOnRestore(t *testing.T) {
	for _, c := range []struct{ from, to int }{{2, 3}, {3, 2}, {4, 1}, {1, 4}} {
		t.Run(strings.Join([]string{itoa(c.from), itoa(c.to)}, "->"), func(t *testing.T) {
			const n, k = 30_000, 37
			r := newRun(t, n, k, c.from)
			r.rate = 100_000
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := r.execute(t, ctx, func(env *weir.Env) {
				waitFor(t, func() bool { return env.Status().CompletedCheckpoints.Load() >= 3 })
				cancel()
			})
			if !errors.Is(first.err, context.Canceled) {
				t.Fatalf("first run: %v", first.err)
			}
			if len(first.lines) >= n {
				t.Fatalf("the first run committed all %d lines before it was cancelled; lower the rate", n)
			}
			r.rate, r.parallelism = 0, c.to
			second := r.execute(t, context.Background(), nil)
			if second.err != nil {
				t.Fatalf("resume at parallelism %d: %v\nlog:\n%s", c.to, second.err, second.log)
			}
			if second.readErr != nil {
				t.Fatal(second.readErr)
			}
			if !strings.Contains(second.log.String(), "msg=restoring") {
				t.Fatal("the second run did not restore a checkpoint")
			}
			if d := demo.Diff(demo.Expected(n, k), second.lines); d != "" {
				t.Fatalf("resumed at parallelism %d: output differs from a run without rescaling: %s", c.to, d)
			}
			t.Logf("%d lines committed before the rescale, exact after", len(first.lines))
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

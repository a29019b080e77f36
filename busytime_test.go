package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// endless emits records as fast as asked, or (idle) waits and emits
// nothing.
type endless struct{ idle bool }

func (endless) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s endless) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	if s.idle {
		time.Sleep(5 * time.Millisecond)
		return dst, nil
	}
	for i := range max {
		dst = append(dst, int64(i))
	}
	return dst, nil
}
func (endless) SnapshotState(int64) error   { return nil }
func (endless) Close(context.Context) error { return nil }

// slowSink takes 2 ms per batch.
type slowSink struct{}

func (slowSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (slowSink) Write(context.Context, []int64) error {
	time.Sleep(2 * time.Millisecond)
	return nil
}
func (slowSink) Flush(context.Context) error { return nil }
func (slowSink) Close(context.Context) error { return nil }

// TestBusyTime checks the busy/idle/backpressured split where it is
// plain: a fast source feeding a slow sink is backpressured and the sink
// busy; a source that reads nothing and its consumer are idle.
func TestBusyTime(t *testing.T) {
	for _, c := range []struct {
		name string
		idle bool
		// want names, per vertex, the part that must exceed 700 ms per
		// second.
		want []string
	}{
		{"backpressured", false, []string{"backpressured", "busy"}},
		{"idle", true, []string{"idle", "idle"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 1, "0"))
			src := weir.FromSource(env, func() weir.Source[int64] { return endless{idle: c.idle} })
			weir.SinkTo(weir.Rebalance(src), func() weir.Sink[int64] { return slowSink{} })
			job, err := env.Start(t.Context(), "busy")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { job.Cancel(); _ = job.Wait() }()
			part := func(tt jobstatus.TaskTime, name string) int64 {
				switch name {
				case "busy":
					return tt.BusyMsPerSecond
				case "idle":
					return tt.IdleMsPerSecond
				}
				return tt.BackPressuredMsPerSecond
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				tasks := hooks.Plan(env).Status.Tasks()
				ok := len(tasks) == len(c.want)
				for i := 0; ok && i < len(tasks); i++ {
					tt := tasks[i].Time
					ok = part(tt, c.want[tasks[i].Vertex]) > 700 && tt.Busy+tt.Idle+tt.BackPressured > 0
				}
				if ok {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("tasks' times after 20 s: %+v, want per vertex %v above 700 ms/s\nlog:\n%s", tasks, c.want, log)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

type discardSink struct{}

func (discardSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discardSink) Write(context.Context, []int64) error             { return nil }
func (discardSink) Flush(context.Context) error                      { return nil }
func (discardSink) Close(context.Context) error                      { return nil }

// TestStuckTaskEndsTaskManager cancels a job whose map blocks ignoring
// cancellation: after task.cancellation.timeout the TaskManager gives up
// on it and its process ends with an error naming the task, instead of
// holding the slot and never registering again.
func TestStuckTaskEndsTaskManager(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the stuck map return, so no goroutine leaks
	entered := make(chan struct{}, 1)
	resolve := func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
		cfg := weir.NewConfig()
		for k, v := range spec.Config {
			if err := cfg.Set(k, v); err != nil {
				return nil, runtime.JobConfig{}, err
			}
		}
		env := weir.NewEnv(weir.WithConfig(cfg))
		src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i })).UID("src")
		stuck := weir.Map(src, func(v int64) int64 {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release // ignores every cancellation
			return v
		}).UID("stuck")
		weir.SinkTo(stuck, func() weir.Sink[int64] { return discardSink{} }).UID("sink")
		return hooks.Plan(env).Resolve(ctx, spec.Name)
	}
	c := startTestCluster(t, JobManagerConfig{Resolve: resolve})
	c.tmCancellationTimeout = 300 * time.Millisecond
	c.startTM("tm-a", 1)
	spec := &pb.JobSpec{Name: "stuck", Kind: "stuck", Config: map[string]string{"parallelism.default": "1"}}
	if _, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("the map never ran\n%s", c.log.String())
	}
	if _, err := c.client().Cancel(context.Background(), &pb.CancelRequest{Job: "stuck"}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	tm := c.tms["tm-a"]
	delete(c.tms, "tm-a")
	c.mu.Unlock()
	select {
	case err := <-tm.done:
		if err == nil || !strings.Contains(err.Error(), "did not stop within 300ms of its cancellation (task.cancellation.timeout)") || !strings.Contains(err.Error(), "job stuck") {
			t.Fatalf("TaskManager ended with %v, want the stuck task named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the TaskManager did not give up on its stuck task\n%s", c.log.String())
	}
	tm.cancel()
}

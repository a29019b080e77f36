package weir_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// TestCancelUnderBackpressureOverRemoteChannels cancels a job whose
// sources are held back by a slow map on other TaskManagers (local mode,
// 3 TaskManagers with their own data planes on loopback): every producer
// waits for credit on a remote channel, every consumer holds a full
// receive queue, and checkpoints run through it. Execute must return the
// cancellation promptly, and every goroutine of the job (tasks, connection
// readers and writers, accept loops, snapshot writers) must be gone once
// it has.
func TestCancelUnderBackpressureOverRemoteChannels(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	env, log := newEnv(testConfig(t, 3, "20ms",
		config.LocalTaskManagers, "3",
		config.NetworkCreditsPerChannel, "1",
		config.BatchSize, "16",
	))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(1<<40))).Name("src").UID("src")
	slow := weir.Map(weir.Rebalance(src), func(v int64) int64 {
		deadline := time.Now().Add(50 * time.Microsecond)
		for time.Now().Before(deadline) {
		}
		return v
	}).UID("slow")
	sums := weir.Reduce(weir.KeyBy(slow, func(v int64) int64 { return v % 7 }), func(a, v int64) int64 { return a + v }).UID("sum")
	weir.SinkTo(sums, func() weir.Sink[int64] { return discard{} }).UID("sink")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env.Execute(ctx, "cancel") }()
	st := hooks.Plan(env).Status
	waitUntil(t, done, func() bool {
		pressed := 0
		for _, ts := range st.Tasks() {
			if ts.Name == "src" && ts.BackPressured {
				pressed++
			}
		}
		return pressed > 0 && st.CompletedCheckpoints.Load() >= 2
	}, log)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Execute = %v, want context.Canceled\nlog:\n%s", err, log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Execute did not return within 30s of the cancellation\nlog:\n%s", log)
	}
	if st.RemoteBytesSent.Load() == 0 {
		t.Errorf("no record crossed TCP: the test did not exercise remote channels")
	}
}

// discard is a sink that drops its records.
type discard struct{}

func (discard) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard) Write(context.Context, []int64) error             { return nil }
func (discard) Flush(context.Context) error                      { return nil }
func (discard) Close(context.Context) error                      { return nil }

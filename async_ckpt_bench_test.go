package weir_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
)

// BenchmarkAsyncCheckpointInFlight measures a checkpoint of an AsyncMap
// holding 10,000 calls in flight (capacity 10,000, calls that take 5 s):
// its duration and size, against the same checkpoint with nothing in
// flight (a plain Map), in the same run. The in-flight inputs are stored
// in the checkpoint and re-issued after a restore.
//
//	go test -run '^$' -bench AsyncCheckpointInFlight -benchtime 1x .
func BenchmarkAsyncCheckpointInFlight(b *testing.B) {
	const inFlight = 10_000
	measure := func(async bool) (time.Duration, int64) {
		env := weir.NewEnv(weir.WithParallelism(1), weir.WithCheckpointDir(filepath.Join(b.TempDir(), "checkpoints")))
		// inFlight records, then an open input that stays idle: the
		// checkpoint comes while every call is pending and the queue
		// (capacity 2 x inFlight) has room, so its barrier is not held
		// behind a full queue.
		var emitted atomic.Int64
		src := weir.FromSource(env, func() weir.Source[int64] { return &numbers{n: inFlight, emitted: &emitted} })
		var out weir.Stream[string]
		var started atomic.Int64
		if async {
			out = weir.AsyncMap(src, func(ctx context.Context, i int64, _ weir.AsyncCall) (string, error) {
				started.Add(1)
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(5 * time.Second):
				}
				return "", nil
			}, weir.WithAsyncCapacity(2*inFlight), weir.WithAsyncUnordered(), weir.WithAsyncTimeout(time.Minute))
		} else {
			out = weir.Map(src, func(i int64) string { started.Add(1); return "" })
		}
		var got atomic.Int64
		weir.SinkTo(out, func() weir.Sink[string] { return countSink{&got} })
		job, err := env.Start(b.Context(), "async-ckpt")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { job.Cancel(); _ = job.Wait() }()
		for started.Load() < inFlight {
			time.Sleep(time.Millisecond)
		}
		var id int64
		for {
			if id, err = job.Checkpoint(b.Context()); err == nil {
				break
			}
			select {
			case <-job.Done():
				b.Fatalf("the job ended before its checkpoint: %v", job.Wait())
			case <-time.After(5 * time.Millisecond):
			}
		}
		st := hooks.Plan(env).Status
		for st.LastCheckpointID.Load() < id {
			time.Sleep(time.Millisecond)
		}
		return time.Duration(st.LastCheckpointDuration.Load()), st.LastCheckpointSize.Load()
	}
	for b.Loop() {
		d, size := measure(true)
		d0, size0 := measure(false)
		b.ReportMetric(float64(d.Milliseconds()), "inflight-ckpt-ms")
		b.ReportMetric(float64(size), "inflight-ckpt-bytes")
		b.ReportMetric(float64(d0.Milliseconds()), "plain-ckpt-ms")
		b.ReportMetric(float64(size0), "plain-ckpt-bytes")
	}
}

// numbers emits 0..n-1, then idles with its input open; its position is
// operator state.
type numbers struct {
	n, next int64
	pos     *weir.OperatorList[int64]
	emitted *atomic.Int64
}

func (s *numbers) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	return err
}

func (s *numbers) Read(ctx context.Context, dst []int64, limit int) ([]int64, error) {
	for ; s.next < s.n && limit > 0; limit-- {
		dst = append(dst, s.next)
		s.next++
		s.emitted.Add(1)
	}
	if len(dst) == 0 {
		time.Sleep(time.Millisecond)
	}
	return dst, nil
}

func (s *numbers) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *numbers) Close(context.Context) error { return nil }

package weir_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

// TestJobHandle drives a running job through its handle: a triggered
// checkpoint completes, a savepoint is written, and Stop with a savepoint
// ends the job FINISHED with its committed output exactly that of the
// records the sources emitted before the stop.
func TestJobHandle(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "0"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(20_000))).UID("numbers") // unbounded
	out := sinkLines(t, weir.Map(src, func(i int64) string { return strconv.FormatInt(i, 10) }))
	job, err := env.Start(t.Context(), "handle")
	if err != nil {
		t.Fatal(err)
	}
	for job.Stats().State != weir.JobRunning {
		time.Sleep(time.Millisecond)
	}
	id, err := job.Checkpoint(t.Context())
	if err != nil {
		t.Fatalf("Checkpoint: %v\nlog:\n%s", err, log)
	}
	for job.Stats().LastCheckpointID < id {
		time.Sleep(time.Millisecond)
	}
	dir := t.TempDir()
	sp, err := job.Savepoint(t.Context(), dir)
	if err != nil || !strings.HasPrefix(sp, dir) {
		t.Fatalf("Savepoint = %q, %v: want a folder under %s\nlog:\n%s", sp, err, dir, log)
	}
	if _, err := os.Stat(sp); err != nil {
		t.Fatalf("savepoint: %v", err)
	}
	final, err := job.Stop(t.Context(), dir)
	if err != nil || final == "" || final == sp {
		t.Fatalf("Stop = %q, %v: want a second savepoint", final, err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("Wait after Stop = %v, want nil\nlog:\n%s", err, log)
	}
	st := job.Stats()
	if st.State != weir.JobFinished || st.CompletedCheckpoints < 3 || st.Ended.IsZero() {
		t.Errorf("Stats after Stop = %+v: want FINISHED after at least 3 checkpoints", st)
	}
	if got := int64(len(committed(t, out))); got != st.SourceRecords {
		t.Errorf("committed %d lines, the sources emitted %d", got, st.SourceRecords)
	}

	// A new job restores the final savepoint (WithRestoreFrom) and goes on.
	env2 := weir.NewEnv(weir.WithConfig(testConfig(t, 2, "0")), weir.WithRestoreFrom(final))
	src2 := weir.FromSource(env2, datagen.New(ints(0), datagen.WithRate(20_000))).UID("numbers")
	sinkInto(weir.Map(src2, func(i int64) string { return strconv.FormatInt(i, 10) }), out)
	job2, err := env2.Start(t.Context(), "handle-resumed")
	if err != nil {
		t.Fatal(err)
	}
	for job2.Stats().State != weir.JobRunning {
		time.Sleep(time.Millisecond)
	}
	if _, err := job2.Stop(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if err := job2.Wait(); err != nil {
		t.Fatal(err)
	}
	if id := job2.Stats().RestoredCheckpoint; id != st.LastCheckpointID {
		t.Errorf("resumed job restored checkpoint %d, want the stopped job's last, %d", id, st.LastCheckpointID)
	}
}

// TestJobCancel: Cancel ends a running job with context.Canceled.
func TestJobCancel(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0"))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(1000))), discardSink[int64])
	job, err := env.Start(t.Context(), "cancel")
	if err != nil {
		t.Fatal(err)
	}
	job.Cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after Cancel = %v, want context.Canceled", err)
	}
	select {
	case <-job.Done():
	default:
		t.Fatal("Done is open after Wait returned")
	}
}

// TestStartRejectsBadOption: a typed option with a bad value fails Start
// naming the key, before anything runs.
func TestStartRejectsBadOption(t *testing.T) {
	env := weir.NewEnv(weir.WithConfig(testConfig(t, 1, "0")), weir.WithParallelism(0))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(1))), discardSink[int64])
	if _, err := env.Start(t.Context(), "bad"); err == nil || !strings.Contains(err.Error(), weir.ParallelismDefault) {
		t.Fatalf("Start = %v, want an error naming %s", err, weir.ParallelismDefault)
	}
}

// TestConfigGettersNeverPanic: user keys of the wrong name or kind come
// back as errors.
func TestConfigGettersNeverPanic(t *testing.T) {
	cfg := weir.NewConfig()
	if err := cfg.Set(weir.CheckpointingInterval, "3 s"); err != nil {
		t.Fatal(err)
	}
	if d, err := cfg.Duration(weir.CheckpointingInterval); err != nil || d != 3*time.Second {
		t.Errorf("Duration = %v, %v; want 3s", d, err)
	}
	if _, err := cfg.Duration("execution.checkpointing.intervall"); err == nil || !strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Duration of a misspelt key = %v, want an error with a suggestion", err)
	}
	if _, err := cfg.Int(weir.CheckpointingInterval); err == nil {
		t.Error("Int of a duration key: no error")
	}
	if v, err := cfg.Get(weir.CheckpointingMode); err != nil || v != weir.ExactlyOnce {
		t.Errorf("Get(mode) = %q, %v; want %s", v, err, weir.ExactlyOnce)
	}
	if cfg.IsSet("no.such.key") || !cfg.IsSet(weir.CheckpointingInterval) {
		t.Error("IsSet is wrong")
	}
}

// TestZeroConfig: a zero Config (a user's &weir.Config{}) holds the
// defaults and runs a job, instead of panicking on its nil engine
// configuration.
func TestZeroConfig(t *testing.T) {
	var cfg weir.Config
	if v, err := cfg.Get(weir.CheckpointingMode); err != nil || v != weir.ExactlyOnce {
		t.Errorf("Get on a zero Config = %q, %v; want the default %s", v, err, weir.ExactlyOnce)
	}
	zero := &weir.Config{}
	env := weir.NewEnv(weir.WithConfig(zero), weir.WithCheckpointDir(filepath.Join(t.TempDir(), "state")))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))), discardSink[int64])
	if err := env.Execute(t.Context(), "zero-config"); err != nil {
		t.Fatal(err)
	}
	if !zero.IsSet(weir.CheckpointsDir) {
		t.Error("WithCheckpointDir did not set the key on the zero Config given with WithConfig")
	}
}

// ctxSource blocks in Read until its ctx is cancelled, then records it.
type ctxSource struct {
	reading   chan<- struct{}
	cancelled *atomic.Bool
}

func (s *ctxSource) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *ctxSource) Read(ctx context.Context, dst []int64, _ int) ([]int64, error) {
	select {
	case s.reading <- struct{}{}:
	default:
	}
	<-ctx.Done()
	s.cancelled.Store(true)
	return dst, ctx.Err()
}
func (s *ctxSource) SnapshotState(int64) error                       { return nil }
func (s *ctxSource) Close(context.Context) error                     { return nil }
func discardSink[T any]() weir.Sink[T]                               { return nullSink[T]{} }
func (nullSink[T]) Open(context.Context, *weir.RuntimeContext) error { return nil }

type nullSink[T any] struct{}

func (nullSink[T]) Write(context.Context, []T) error { return nil }
func (nullSink[T]) Flush(context.Context) error      { return nil }
func (nullSink[T]) Close(context.Context) error      { return nil }

// TestUserCallContextCancelled: the ctx a source's Read gets is cancelled
// when the job is, so a Read that waits on IO returns instead of leaving
// the task to the stuck-task watchdog.
func TestUserCallContextCancelled(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0"))
	reading := make(chan struct{}, 1)
	var cancelled atomic.Bool
	src := weir.FromSource(env, func() weir.Source[int64] { return &ctxSource{reading: reading, cancelled: &cancelled} })
	weir.SinkTo(src, discardSink[int64])
	job, err := env.Start(t.Context(), "ctx")
	if err != nil {
		t.Fatal(err)
	}
	<-reading
	job.Cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if !cancelled.Load() {
		t.Fatal("Read returned without seeing its ctx cancelled")
	}
}

// timerless registers a timer but has no OnTimer.
type timerless struct{}

func (timerless) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }
func (timerless) ProcessElement(_ int64, kc *weir.KeyedContext[int64], _ *weir.Collector[int64]) error {
	kc.RegisterProcessingTimeTimer(0)
	return nil
}

// closing counts Close calls of a keyed function.
type closing struct{ closed *atomic.Int32 }

func (closing) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }
func (closing) ProcessElement(v int64, _ *weir.KeyedContext[int64], out *weir.Collector[int64]) error {
	out.Collect(v)
	return nil
}
func (c closing) Close(context.Context) error { c.closed.Add(1); return nil }

// TestOptionalFunctionInterfaces: OnTimer and Close are optional; a timer
// of a function without OnTimer fails the job naming the function, and a
// Closer is closed once per subtask.
func TestOptionalFunctionInterfaces(t *testing.T) {
	t.Run("timer without OnTimer", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0", "restart-strategy.type", "none"))
		keyed := weir.KeyBy(weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(1000))), func(i int64) int64 { return i })
		weir.SinkTo(weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, int64] { return timerless{} }), discardSink[int64])
		err := env.Execute(t.Context(), "timerless")
		var jf *weir.JobFailedError
		if !errors.As(err, &jf) || !strings.Contains(err.Error(), "OnTimer") {
			t.Fatalf("Execute = %v, want a JobFailedError naming the missing OnTimer", err)
		}
	})
	t.Run("Closer", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 2, "0"))
		var closed atomic.Int32
		keyed := weir.KeyBy(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(100))), func(i int64) int64 { return i })
		weir.SinkTo(weir.Process(keyed, func() weir.KeyedProcessFunction[int64, int64, int64] { return closing{&closed} }), discardSink[int64])
		if err := env.Execute(t.Context(), "closer"); err != nil {
			t.Fatal(err)
		}
		if n := closed.Load(); n != 2 {
			t.Errorf("Close called %d times, want once per subtask (2)", n)
		}
	})
}

// TestJobEndedBeforeRunning: a job that fails before the runtime runs it
// (its WithRestoreFrom path does not exist) ends FAILED, not CREATED, and
// names the failure in its Stats.
func TestJobEndedBeforeRunning(t *testing.T) {
	env := weir.NewEnv(weir.WithConfig(testConfig(t, 1, "0")), weir.WithRestoreFrom(filepath.Join(t.TempDir(), "chk-3")))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))), discardSink[int64])
	job, err := env.Start(t.Context(), "no-restore")
	if err != nil {
		t.Fatal(err)
	}
	werr := job.Wait()
	if werr == nil {
		t.Fatal("Wait = nil for a job restoring a missing checkpoint")
	}
	st := job.Stats()
	if st.State != weir.JobFailed || st.Ended.IsZero() || !strings.Contains(st.LastFailure, "chk-3") {
		t.Errorf("Stats after a failed start = %+v: want FAILED, Ended set, LastFailure naming the path", st)
	}
	if _, err := job.Stop(t.Context(), ""); !errors.Is(err, weir.ErrNotRunning) {
		t.Errorf("Stop of an ended job = %v, want ErrNotRunning", err)
	}
	if _, err := job.Checkpoint(t.Context()); !errors.Is(err, weir.ErrNotRunning) {
		t.Errorf("Checkpoint of an ended job = %v, want ErrNotRunning", err)
	}
	if _, err := job.Savepoint(t.Context(), t.TempDir()); !errors.Is(err, weir.ErrNotRunning) {
		t.Errorf("Savepoint of an ended job = %v, want ErrNotRunning", err)
	}
	job.Cancel() // no effect once ended
	if err := job.Wait(); err != werr {
		t.Errorf("Wait after Cancel of an ended job = %v, want the first result %v", err, werr)
	}
}

// TestEnvRunsAgain: an Env starts its graph again once its job ended;
// the second job's Stats are its own, and the first job's stay as they
// were when it ended.
func TestEnvRunsAgain(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0"))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(100))), discardSink[int64])
	first, err := env.Start(t.Context(), "again-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	before := first.Stats()
	second, err := env.Start(t.Context(), "again-2")
	if err != nil {
		t.Fatal(err)
	}
	if st := second.Stats(); st.SourceRecords > 100 || st.State == weir.JobFinished {
		t.Errorf("second job's Stats right after Start = %+v: the first job's figures", st)
	}
	if err := second.Wait(); err != nil {
		t.Fatal(err)
	}
	st := second.Stats()
	if st.State != weir.JobFinished || st.SourceRecords != 100 || st.CompletedCheckpoints != before.CompletedCheckpoints || !st.Started.After(before.Ended) {
		t.Errorf("second job's Stats = %+v; first job's %+v: want the same counts, started after the first ended", st, before)
	}
	if after := first.Stats(); after != before {
		t.Errorf("first job's Stats changed when the Env ran again:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestEnvOneJobAtATime: Start fails while the Env's job runs, and works
// again once it ended.
func TestEnvOneJobAtATime(t *testing.T) {
	env, _ := newEnv(testConfig(t, 1, "0"))
	weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(1000))), discardSink[int64])
	job, err := env.Start(t.Context(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	if j2, err := env.Start(t.Context(), "busy-2"); err == nil {
		j2.Cancel()
		j2.Wait()
		t.Error("a second Start while the first job runs succeeded")
	}
	job.Cancel()
	if err := job.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
	j3, err := env.Start(t.Context(), "busy-3")
	if err != nil {
		t.Fatalf("Start after the job ended: %v", err)
	}
	j3.Cancel()
	if err := j3.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
}

package weir_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/print"
)

// TestExecuteRejects: problems found while building the job or in its
// configuration come back from Execute before anything runs.
func TestExecuteRejects(t *testing.T) {
	t.Run("no operators", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		if err := env.Execute(t.Context(), "test"); err == nil || !strings.Contains(err.Error(), "no operators") {
			t.Errorf("Execute = %v, want an error saying the job has no operators", err)
		}
	})
	t.Run("bad parallelism", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))).Name("numbers").Parallelism(0)
		weir.SinkTo(src, print.New[int64](&bytes.Buffer{}))
		if err := env.Execute(t.Context(), "test"); err == nil || !strings.Contains(err.Error(), `"numbers"`) {
			t.Errorf("Execute = %v, want an error naming operator \"numbers\"", err)
		}
	})
	t.Run("bad sink parallelism", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10)))
		weir.SinkTo(src, print.New[int64](&bytes.Buffer{})).Name("printer").Parallelism(0)
		if err := env.Execute(t.Context(), "test"); err == nil || !strings.Contains(err.Error(), `"printer"`) {
			t.Errorf("Execute = %v, want an error naming operator \"printer\"", err)
		}
	})
	t.Run("keyed state declared on a sink", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10)))
		weir.SinkTo(src, print.New[int64](&bytes.Buffer{})).Name("printer").
			Declare(weir.OperatorListStateOf[int64]("position"), weir.ValueStateOf[int64]("total"))
		if err := env.Execute(t.Context(), "test"); err == nil || !strings.Contains(err.Error(), `"printer"`) || !strings.Contains(err.Error(), "keyed operator") {
			t.Errorf("Execute = %v, want an error naming operator \"printer\" and saying keyed state needs a keyed operator", err)
		}
	})
	t.Run("duplicate uid", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))).Name("numbers").UID("x")
		weir.SinkTo(src, print.New[int64](&bytes.Buffer{})).Name("printer").UID("x")
		err := env.Execute(t.Context(), "test")
		if err == nil || !strings.Contains(err.Error(), `"numbers"`) || !strings.Contains(err.Error(), `"printer"`) {
			t.Errorf("Execute = %v, want an error naming both operators", err)
		}
	})
	t.Run("job name with a path separator", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0"))
		weir.SinkTo(weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))), print.New[int64](&bytes.Buffer{}))
		if err := env.Execute(t.Context(), "a/b"); err == nil || !strings.Contains(err.Error(), "a/b") {
			t.Errorf("Execute = %v, want an error naming the job name", err)
		}
	})
}

// TestExecuteCancelledContext: an unbounded job stops when its context is
// cancelled, returns the context's error, and leaves no goroutine behind
// (TestMain checks that).
func TestExecuteCancelledContext(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "5ms"))
	src := weir.FromSource(env, datagen.New(ints(0))) // unbounded
	var buf bytes.Buffer
	weir.SinkTo(src, print.New[int64](&buf))
	ctx, cancel := context.WithCancel(t.Context())
	job, err := env.Start(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- job.Wait() }()
	waitUntil(t, done, func() bool { return job.Stats().CompletedCheckpoints >= 2 }, log)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute = %v, want context.Canceled", err)
	}
	if job.Stats().SourceRecords == 0 {
		t.Error("the source emitted nothing")
	}
}

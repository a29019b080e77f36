package windows_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/testutil"
)

func run(t *testing.T, o windows.Options, p int, extra ...string) (lines, late []string) {
	lines, late, _ = runStatus(t, o, p, extra...)
	return lines, late
}

// runStatus is run, also returning the job's status.
func runStatus(t *testing.T, o windows.Options, p int, extra ...string) (lines, late []string, st *jobstatus.JobStatus) {
	t.Helper()
	cfg := weir.NewConfig()
	kvs := append([]string{
		config.ParallelismDefault, fmt.Sprint(p),
		config.CheckpointsDir, filepath.Join(t.TempDir(), "state"),
		config.CheckpointingInterval, "50ms",
		config.BatchSize, "128",
		config.RestartStrategyType, config.RestartNone,
	}, extra...)
	for i := 0; i < len(kvs); i += 2 {
		if err := cfg.Set(kvs[i], kvs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	log := &testutil.SyncBuffer{}
	env := weir.NewEnv(weir.WithConfig(cfg), weir.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	o.Out = filepath.Join(t.TempDir(), "out")
	windows.Build(env, o)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "windows"); err != nil {
		t.Fatalf("Execute: %v\n%s", err, log)
	}
	var err error
	if lines, err = file.ReadCommitted(o.Out); err != nil {
		t.Fatal(err)
	}
	if late, err = file.ReadCommitted(filepath.Join(o.Out, "late")); err != nil {
		t.Fatal(err)
	}
	return lines, late, hooks.Plan(env).Status
}

func TestWindowsExact(t *testing.T) {
	for _, w := range []string{"tumble:500", "slide:1000,250", "session:3"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", w, p), func(t *testing.T) {
				spec, err := windows.ParseSpec(w)
				if err != nil {
					t.Fatal(err)
				}
				o := windows.Options{Events: 20000, Keys: 50, Window: spec, Spacing: 1, MaxDisorder: 200, OutOfOrderness: -1}
				if spec.Kind == "session" {
					o.Spacing = 2
					o.MaxDisorder = 20
				}
				o.Defaults()
				lines, late := run(t, o, p)
				if err := windows.Verify(o, lines, late); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestWindowsAcrossTaskManagers: timestamps and watermarks cross
// TaskManagers over TCP (two local TaskManagers, so every shuffle channel
// between them is remote) and the windows still fire exactly.
func TestWindowsAcrossTaskManagers(t *testing.T) {
	spec, _ := windows.ParseSpec("slide:400,100")
	o := windows.Options{Events: 20000, Keys: 40, Window: spec, Spacing: 1, MaxDisorder: 150, OutOfOrderness: -1}
	o.Defaults()
	lines, late, st := runStatus(t, o, 2, config.LocalTaskManagers, "2")
	if err := windows.Verify(o, lines, late); err != nil {
		t.Fatal(err)
	}
	if st.RemoteBytesSent.Load() == 0 {
		t.Fatal("no record crossed TCP: the test did not exercise remote channels")
	}
}

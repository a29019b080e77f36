package bench

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"sync/atomic"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/keyedsum"
)

// runLocalKeyedSum runs keyed-sum at parallelism 2 in this process, in
// local mode with tms TaskManagers (2: subtask i on TaskManager i, the
// keyed exchange between them over loopback TCP through the same remote
// channels as the cluster's), and measures it as the cluster run is
// measured: RUNNING to FINISHED from the job's JobStatus, and the bytes
// its remote channels sent (JobStatus.RemoteBytesSent).
func runLocalKeyedSum(ctx context.Context, records, keys int64, tms int) (shuffleRun, error) {
	dir, err := os.MkdirTemp("", "weir-bench-shuffle-local-*")
	if err != nil {
		return shuffleRun{}, err
	}
	defer os.RemoveAll(dir)
	cfg := weir.NewConfig()
	for k, v := range map[string]string{
		config.ParallelismDefault:    "2",
		config.CheckpointingInterval: "0ms",
		config.CheckpointsDir:        dir,
		config.LocalTaskManagers:     fmt.Sprint(tms),
	} {
		if err := cfg.Set(k, v); err != nil {
			return shuffleRun{}, err
		}
	}
	// The job weir run keyed-sum builds, with the same counting sink.
	var seen atomic.Int64
	env := weir.NewEnv(weir.WithConfig(cfg))
	keyedsum.Build(env, keyedsum.Options{Records: records, Keys: keys, Seen: &seen})
	// Start from a collected heap, as the TaskManager processes do after
	// the previous round's idle time.
	goruntime.GC()
	if err := env.Execute(ctx, "keyed-sum"); err != nil {
		return shuffleRun{}, fmt.Errorf("bench shuffle: keyed-sum with %d in-process TaskManagers: %w", tms, err)
	}
	if got := seen.Load(); got != records {
		return shuffleRun{}, fmt.Errorf("bench shuffle: keyed-sum with %d in-process TaskManagers: the sinks counted %d results for %d records", tms, got, records)
	}
	st := hooks.Plan(env).Status
	start, end := st.Times()
	return shuffleRun{Seconds: end.Sub(start).Seconds(), RemoteBytes: st.RemoteBytesSent.Load()}, nil
}

// machineNote names what the figures ran on: CPUs, OS, Go version.
func machineNote() string {
	return fmt.Sprintf("%d CPUs (GOMAXPROCS %d), %s/%s, %s; all processes on one machine, loopback TCP",
		goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH, goruntime.Version())
}

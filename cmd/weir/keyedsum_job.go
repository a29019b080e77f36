package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

const keyedSumLong = `keyed-sum is the demo's computation without its file sink: it generates
events i = 0 … N-1 as the demo does, keys them by account (a hash
partition: at parallelism P, about (P-1)/P of the records go to an
aggregator subtask other than their source's), keeps each account's count
and total in heap keyed state, and counts and drops the results. With
nothing written out, its throughput is that of the sources, the shuffle and
the keyed aggregation; weir bench keyed-sum and weir bench shuffle measure
it.

When the job FINISHED, the side that launched it checks that the sinks
counted one result per record. In a local run the sinks count in memory;
with --jobmanager give --count-dir, a folder every TaskManager reaches at
the same path, where each sink subtask writes its count when it closes.
The check needs a run without restores from a checkpoint (after one, a sink
counts only what came after the checkpoint); with --checkpoint-interval 0,
the default, a restart replays from the start and the count is exact.`

// keyedSumFlags are keyed-sum's flags: one value per command line or
// build.
type keyedSumFlags struct {
	jf       jobFlags
	records  int64
	keys     int64
	countDir string
	// seen is what the sinks of this build counted: in a local run, the
	// build whose Finish checks it.
	seen atomic.Int64
}

// keyedSumJob is `weir run keyed-sum`.
func keyedSumJob() app.Job {
	return app.Job{
		Name:  "keyed-sum",
		Short: "The demo's per-account count+sum with a counting sink: measures sources, shuffle and keyed state",
		Long:  keyedSumLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			k := &keyedSumFlags{}
			fs.Int64Var(&k.records, "records", 10_000_000, "events to generate")
			fs.Int64Var(&k.keys, "keys", 1000, "number of accounts")
			fs.StringVar(&k.countDir, "count-dir", "", "folder where each sink subtask writes its count when it closes (needed to check the count of a submitted job)")
			k.jf.register(fs, "0")
			app.MarkPath(fs, "count-dir")
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error { return k.configure(fs, cfg) },
				Build:     k.build,
				Execute:   k.jf.execute,
				Finish:    k.finish,
			}
		},
	}
}

func (k *keyedSumFlags) configure(fs *pflag.FlagSet, cfg *weir.Config) error {
	if k.records < 1 {
		return usagef("--records must be at least 1, got %d", k.records)
	}
	if k.keys < 1 {
		return usagef("--keys must be at least 1, got %d", k.keys)
	}
	if err := k.jf.configure(fs, cfg); err != nil {
		return err
	}
	if err := k.jf.quickRestarts(cfg); err != nil {
		return err
	}
	if k.countDir == "" {
		if fs.Lookup("jobmanager").Changed {
			fmt.Fprintln(os.Stderr, "keyed-sum: no --count-dir: the result count of the submitted job is not checked")
		}
		return nil
	}
	if err := checkWritableDir("--count-dir", k.countDir); err != nil {
		return err
	}
	// Counts of an earlier run (perhaps at a higher parallelism) would
	// add to this one's.
	old, _ := filepath.Glob(filepath.Join(k.countDir, "count-*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return usagef("--count-dir: remove an earlier run's count: %v", err)
		}
	}
	return nil
}

func (k *keyedSumFlags) build(env *weir.Env) error {
	k.jf.apply(env, k.records)
	results := demo.Aggregate(env, demo.Options{Events: k.records, Keys: k.keys})
	weir.SinkTo(results, func() weir.Sink[demo.Result] { return &countSink{seen: &k.seen, dir: k.countDir} }).Name("count").UID("count")
	return nil
}

// finish checks that the sinks counted one result per record.
func (k *keyedSumFlags) finish(_ context.Context, cfg *weir.Config) error {
	got, where := k.seen.Load(), "in this process"
	if k.countDir != "" {
		var err error
		if got, err = readCounts(k.countDir); err != nil {
			return err
		}
		where = "in " + k.countDir
	} else if got == 0 {
		return nil // a submitted job without --count-dir: nothing to check
	}
	if got != k.records && hooks.Config(cfg).Duration(config.CheckpointingInterval) == 0 {
		return fmt.Errorf("keyed-sum: the sinks counted %d results (%s) for %d records", got, where, k.records)
	}
	fmt.Fprintf(os.Stderr, "keyed-sum: the sinks counted %d results for %d records\n", got, k.records)
	return nil
}

// readCounts adds up the count files the sink subtasks wrote into dir.
func readCounts(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "count-*"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("keyed-sum: no sink wrote its count into --count-dir %s: do the TaskManagers reach that folder at the same path?", dir)
	}
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("keyed-sum: read a sink's count: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("keyed-sum: sink count %s: %w", f, err)
		}
		sum += n
	}
	return sum, nil
}

// countSink discards results, counting them once per batch into seen and,
// with a dir, writing its own count into dir/count-<subtask> when it
// closes.
type countSink struct {
	seen    *atomic.Int64
	dir     string
	subtask int
	n       int64
	sum     int64 // keeps the results' fields live
}

func (s *countSink) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	s.subtask = rc.Subtask()
	return nil
}

func (s *countSink) Write(_ context.Context, b []demo.Result) error {
	for i := range b {
		s.sum += b[i].Count ^ b[i].Total
	}
	s.n += int64(len(b))
	s.seen.Add(int64(len(b)))
	return nil
}

func (s *countSink) Flush(context.Context) error { return nil }

func (s *countSink) Close(context.Context) error {
	if s.dir == "" {
		return nil
	}
	f := filepath.Join(s.dir, fmt.Sprintf("count-%d", s.subtask))
	if err := os.WriteFile(f, []byte(strconv.FormatInt(s.n, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("keyed-sum: write the sink's count: %w", err)
	}
	return nil
}

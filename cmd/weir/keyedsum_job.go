package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/keyedsum"
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
				Summary:   k.jf.faultSummary,
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
	if err := keyedsum.RemoveCounts(k.countDir); err != nil {
		return usagef("--count-dir: %v", err)
	}
	return nil
}

func (k *keyedSumFlags) build(env *weir.Env) error {
	k.jf.apply(env, k.records)
	keyedsum.Build(env, keyedsum.Options{Records: k.records, Keys: k.keys, Seen: &k.seen, CountDir: k.countDir})
	return nil
}

// finish checks that the sinks counted one result per record.
func (k *keyedSumFlags) finish(_ context.Context, out app.Outcome) error {
	got, where := k.seen.Load(), "in this process"
	if k.countDir != "" {
		var err error
		if got, err = keyedsum.ReadCounts(k.countDir); err != nil {
			return err
		}
		where = "in " + k.countDir
	} else if got == 0 {
		return nil // a submitted job without --count-dir: nothing to check
	}
	if got != k.records && hooks.Config(out.Config).Duration(config.CheckpointingInterval) == 0 {
		return fmt.Errorf("keyed-sum: the sinks counted %d results (%s) for %d records", got, where, k.records)
	}
	fmt.Fprintf(os.Stderr, "keyed-sum: the sinks counted %d results for %d records\n", got, k.records)
	return nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

const demoLong = `demo generates events i = 0, 1, … with account = (i*7919) mod K and
amount = ((i*2654435761) mod 2^32) mod 1000 + 1, keys them by account, keeps
each account's count and total, and writes the line "i,account,count,total"
for every event into an exactly-once file sink (committed part files in
--out; in-progress files are hidden, dot-prefixed).

Kill it at any moment and start the same command again: it resumes from
its newest checkpoint, and the committed output is exactly that of a run
without failures. --inject-failures F makes F task failures happen at
random fault points to show the same.

With -D execution.checkpointing.mode=WEAKLY_CONSISTENT a failed task
restarts alone from its own snapshot while the others keep running
(docs/weak-consistency.md); the run ends with the line "weak failover: F
failures, T task restarts, R replayed, L lost, D duplicated", and --verify
counts the event indices without a line (missing) and the lines beyond one
per index (duplicated) and succeeds when they equal L and D exactly.

--sink kafka://HOST:PORT/TOPIC writes each line as a record value in one
Kafka transaction per checkpoint and subtask; --sink nats://HOST:PORT/STREAM
publishes each line as a message payload when its checkpoint completes,
with Nats-Msg-Id headers for the stream's duplicate detection (the stream
is created if absent, with a window that covers the checkpoint timeout
and restart delay); --sink
postgres://USER@HOST:PORT/DB?table=NAME writes rows (i, account, count,
total) through PREPARE TRANSACTION / COMMIT PREPARED (the server needs
max_prepared_transactions > 0). --source kafka://HOST:PORT/TOPIC reads the
events from a topic filled by 'weir tools produce-demo-events' up to the
end the topic has when the job starts (--events 0: without end); --keys
must be the producer's, --events then only tells --verify how many events
to expect, and --rate (which paces generated events) is refused.
--source nats://HOST:PORT/STREAM reads the events from a JetStream stream
filled by 'weir tools produce-demo-events --to nats://…' the same way.

With --jobmanager HOST:PORT the job runs on that cluster; --out and
--state-dir must then be folders every TaskManager reaches at the same
path (--verify reads --out here after the job FINISHED).`

// demoFlags are the demo's flags: one value per command line or build.
type demoFlags struct {
	jf     jobFlags
	events int64
	keys   int64
	rate   float64
	out    string
	verify bool
	source string
	sink   string
}

// demoJob is `weir run demo`.
func demoJob() app.Job {
	return app.Job{
		Name:  "demo",
		Short: "Per-account counts and sums of generated payments, exactly once into files",
		Long:  demoLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			d := &demoFlags{}
			d.register(fs)
			return app.Run{
				Configure: func(ctx context.Context, cfg *weir.Config) error { return d.configure(ctx, fs, cfg) },
				Build:     d.build,
				Summary:   d.jf.faultSummary,
				Finish:    d.finish,
			}
		},
	}
}

func (d *demoFlags) register(fs *pflag.FlagSet) {
	fs.Int64Var(&d.events, "events", 1_000_000, "events to generate; 0 = unbounded")
	fs.Int64Var(&d.keys, "keys", 1000, "number of accounts K")
	fs.Float64Var(&d.rate, "rate", 0, "events per second over all subtasks; 0 = as fast as possible")
	fs.StringVar(&d.out, "out", "", "folder for the committed part files (default <state-dir>/out)")
	fs.BoolVar(&d.verify, "verify", false, "after the run, compare the committed lines with the failure-free output (WEAKLY_CONSISTENT mode: count the missing and duplicated lines and compare them with the run's accounting)")
	fs.StringVar(&d.source, "source", "", "read events from kafka://HOST:PORT/TOPIC or nats://HOST:PORT/STREAM instead of generating them")
	fs.StringVar(&d.sink, "sink", "", "write to kafka://HOST:PORT/TOPIC, postgres://USER@HOST:PORT/DB?table=NAME or nats://HOST:PORT/STREAM instead of files in --out")
	d.jf.register(fs, "1s")
	app.MarkPath(fs, "out")
	app.MarkClientOnly(fs, "verify")
}

// endpoints parses --sink (files in --out by default) and --source.
func (d *demoFlags) endpoints() (sinkEP, srcEP endpoint, err error) {
	sinkEP = endpoint{scheme: "file", dir: d.out}
	if d.sink != "" {
		if sinkEP, err = parseEndpoint("--sink", d.sink); err != nil {
			return endpoint{}, endpoint{}, err
		}
	}
	if d.source != "" {
		if srcEP, err = parseEndpoint("--source", d.source); err != nil {
			return endpoint{}, endpoint{}, err
		}
		if srcEP.scheme != "kafka" && srcEP.scheme != "nats" {
			return endpoint{}, endpoint{}, usagef("--source %q: the demo reads generated events, kafka://HOST:PORT/TOPIC or nats://HOST:PORT/STREAM", d.source)
		}
	}
	return sinkEP, srcEP, nil
}

// configure checks the flags where the job is launched and completes the
// configuration; the default --out is set as a flag so that a submitted
// job carries it.
func (d *demoFlags) configure(ctx context.Context, fs *pflag.FlagSet, cfg *weir.Config) error {
	// Before anything else: configure sets --out itself below.
	if err := d.refuseIneffective(fs); err != nil {
		return err
	}
	if d.events < 0 {
		return usagef("--events must not be negative, got %d", d.events)
	}
	if d.keys < 1 {
		return usagef("--keys must be at least 1, got %d", d.keys)
	}
	if d.rate < 0 {
		return usagef("--rate must not be negative, got %g", d.rate)
	}
	if err := d.jf.configure(fs, cfg); err != nil {
		return err
	}
	if err := d.jf.quickRestarts(cfg); err != nil {
		return err
	}
	if d.out == "" {
		if err := fs.Set("out", filepath.Join(hooks.Config(cfg).String(config.CheckpointsDir), "out")); err != nil {
			return err
		}
	}
	sinkEP, _, err := d.endpoints()
	if err != nil {
		return err
	}
	if sinkEP.scheme == "file" {
		if err := checkWritableDir("--out", sinkEP.dir); err != nil {
			return err
		}
	}
	if d.verify && d.events == 0 {
		return usagef("--verify needs a bounded run (--events > 0)")
	}
	if sinkEP.scheme == "kafka" {
		if err := demoEnsureTopic(ctx, sinkEP, int32(hooks.Config(cfg).Int(config.ParallelismDefault))); err != nil {
			return err
		}
	}
	if sinkEP.scheme == "nats" {
		if err := natsEnsureStream(ctx, sinkEP, demoCheckpointTimes(cfg).retryWindow()); err != nil {
			return err
		}
	}
	return nil
}

// refuseIneffective refuses the demo's flags that a --source or --sink
// would ignore. --keys is not among them: with a Kafka source it derives
// each event's account from its index, and the source checks it against
// the account the producer wrote (demoKafkaEvents).
func (d *demoFlags) refuseIneffective(fs *pflag.FlagSet) error {
	sinkEP, srcEP, err := d.endpoints()
	if err != nil {
		return err
	}
	brokerSource := srcEP.scheme == "kafka" || srcEP.scheme == "nats"
	return refuseIneffective(fs,
		ineffective{flag: "rate", when: brokerSource && d.rate > 0, where: "with --source " + d.source,
			instead: "it paces generated events, and the Kafka (or NATS) source reads the topic as fast as it can; drop --rate, or drop --source to generate the events at that rate"},
		ineffective{flag: "events", when: brokerSource && d.events > 0 && !d.verify, where: "with --source " + d.source + " and without --verify",
			instead: "the Kafka (or NATS) source reads every event in the topic up to its end, and --events only tells --verify how many to expect; add --verify, drop --events, or give --events 0 to follow the topic without end"},
		ineffective{flag: "out", when: d.sink != "", where: "with --sink " + d.sink,
			instead: "--out is the folder of the default file sink, and --sink sends the output to " + sinkEP.String() + "; drop --out, or drop --sink to write files into --out"},
		verifyDetached(fs),
	)
}

// build declares the demo's graph: in a local run, on the client before it
// submits, and in every role of the cluster.
func (d *demoFlags) build(env *weir.Env) error {
	sinkEP, srcEP, err := d.endpoints()
	if err != nil {
		return err
	}
	cfg := env.Config()
	d.jf.apply(env, d.events)
	var evs weir.Stream[demo.Event]
	switch srcEP.scheme {
	case "kafka":
		evs = demoKafkaEvents(env, srcEP, d.keys, d.events > 0)
	case "nats":
		evs = demoNatsEvents(env, srcEP, d.keys, d.events > 0)
	default:
		evs = demo.Events(env, demo.Options{Events: d.events, Keys: d.keys, Rate: d.rate})
	}
	return demoSink(demo.AggregateEvents(evs), sinkEP, demoCheckpointTimes(cfg))
}

// demoCheckpointTimes reads what a transactional sink must outlast from
// the job's configuration.
func demoCheckpointTimes(cfg *weir.Config) checkpointTimes {
	return checkpointTimes{
		interval: hooks.Config(cfg).Duration(config.CheckpointingInterval),
		timeout:  hooks.Config(cfg).Duration(config.CheckpointingTimeout),
		// The longest restart delay the strategies allow by default.
		maxRestartDelay: max(hooks.Config(cfg).Duration(config.ExponentialDelayMaxBackoff), hooks.Config(cfg).Duration(config.FixedDelayDelay), hooks.Config(cfg).Duration(config.FailureRateDelay)),
	}
}

// finish reports the committed lines and, with --verify, compares them
// with the failure-free output; in WEAKLY_CONSISTENT mode, their missing
// and duplicated lines with the job's accounting (verifyWeak), which the
// outcome carries whether the job ran here or on a cluster.
func (d *demoFlags) finish(ctx context.Context, out app.Outcome) error {
	sinkEP, _, err := d.endpoints()
	if err != nil {
		return err
	}
	lines, err := readCommitted(ctx, sinkEP)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "committed %d lines to %s\n", len(lines), sinkEP)
	if d.verify && hooks.Config(out.Config).String(config.CheckpointingMode) == config.ModeWeak {
		return d.verifyWeak(os.Stderr, out.Weak, lines)
	}
	if d.verify {
		if diff := demo.Diff(demo.Expected(d.events, d.keys), lines); diff != "" {
			return fmt.Errorf("verify: committed output differs from a failure-free run: %s", diff)
		}
		fmt.Fprintln(os.Stderr, "verify: committed output equals the failure-free output exactly")
	}
	return nil
}

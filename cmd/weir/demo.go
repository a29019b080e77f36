package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/demo"
)

func newDemoCmd() *cobra.Command {
	var (
		jf     jobFlags
		events int64
		keys   int64
		rate   float64
		out    string
		verify bool
		source string
		sink   string
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Per-account counts and sums of generated payments, exactly once into files",
		Long: `demo generates events i = 0, 1, … with account = (i*7919) mod K and
amount = ((i*2654435761) mod 2^32) mod 1000 + 1, keys them by account, keeps
each account's count and total, and writes the line "i,account,count,total"
for every event into an exactly-once file sink (committed part files in
--out; in-progress files are hidden, dot-prefixed).

Kill it at any moment and start the same command again: it resumes from
its newest checkpoint, and the committed output is exactly that of a run
without failures. --inject-failures F makes F task failures happen at
random fault points to show the same.

--sink kafka://HOST:PORT/TOPIC writes each line as a record value in one
Kafka transaction per checkpoint and subtask; --sink
postgres://USER@HOST:PORT/DB?table=NAME writes rows (i, account, count,
total) through PREPARE TRANSACTION / COMMIT PREPARED (the server needs
max_prepared_transactions > 0). --source kafka://HOST:PORT/TOPIC reads the
events from a topic filled by 'weir tools produce-demo-events'; --events
then only sets what --verify expects.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if events < 0 {
				return usagef("--events must not be negative, got %d", events)
			}
			if keys < 1 {
				return usagef("--keys must be at least 1, got %d", keys)
			}
			if rate < 0 {
				return usagef("--rate must not be negative, got %g", rate)
			}
			cfg, err := jf.configure(c)
			if err != nil {
				return err
			}
			if err := jf.quickRestarts(cfg); err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(cfg.String(config.CheckpointsDir), "out")
			}
			sinkEP := endpoint{scheme: "file", dir: out}
			if sink != "" {
				if sinkEP, err = parseEndpoint("--sink", sink); err != nil {
					return err
				}
			}
			if sinkEP.scheme == "file" {
				if err := checkWritableDir("--out", sinkEP.dir); err != nil {
					return err
				}
			}
			var srcEP endpoint
			if source != "" {
				if srcEP, err = parseEndpoint("--source", source); err != nil {
					return err
				}
				if srcEP.scheme != "kafka" {
					return usagef("--source %q: the demo reads generated events or kafka://HOST:PORT/TOPIC", source)
				}
			}
			if verify && events == 0 {
				return usagef("--verify needs a bounded run (--events > 0)")
			}
			env := weir.NewEnv(cfg)
			jf.apply(env, events)
			var evs weir.Stream[demo.Event]
			if srcEP.scheme == "kafka" {
				evs = demoKafkaEvents(env, srcEP, keys, events > 0)
			} else {
				evs = demo.Events(env, demo.Options{Events: events, Keys: keys, Rate: rate})
			}
			cp := checkpointTimes{
				interval: cfg.Duration(config.CheckpointingInterval),
				timeout:  cfg.Duration(config.CheckpointingTimeout),
				// The longest restart delay the strategies allow by default.
				maxRestartDelay: max(cfg.Duration(config.ExponentialDelayMaxBackoff), cfg.Duration(config.FixedDelayDelay), cfg.Duration(config.FailureRateDelay)),
			}
			if sinkEP.scheme == "kafka" {
				if err := demoEnsureTopic(c.Context(), sinkEP, int32(cfg.Int(config.ParallelismDefault))); err != nil {
					return err
				}
			}
			if err := demoSink(demo.AggregateEvents(evs), sinkEP, cp); err != nil {
				return err
			}
			if err := jf.execute(env, "demo"); err != nil {
				return err
			}
			lines, err := readCommitted(c.Context(), sinkEP)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "committed %d lines to %s\n", len(lines), sinkEP)
			if verify {
				if d := demo.Diff(demo.Expected(events, keys), lines); d != "" {
					return fmt.Errorf("verify: committed output differs from a failure-free run: %s", d)
				}
				fmt.Fprintln(os.Stderr, "verify: committed output equals the failure-free output exactly")
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&events, "events", 1_000_000, "events to generate; 0 = unbounded")
	fs.Int64Var(&keys, "keys", 1000, "number of accounts K")
	fs.Float64Var(&rate, "rate", 0, "events per second over all subtasks; 0 = as fast as possible")
	fs.StringVar(&out, "out", "", "folder for the committed part files (default <state-dir>/out)")
	fs.BoolVar(&verify, "verify", false, "after the run, compare the committed lines with the failure-free output")
	fs.StringVar(&source, "source", "", "read events from kafka://HOST:PORT/TOPIC instead of generating them")
	fs.StringVar(&sink, "sink", "", "write to kafka://HOST:PORT/TOPIC or postgres://USER@HOST:PORT/DB?table=NAME instead of files in --out")
	jf.register(c, "1s")
	return c
}

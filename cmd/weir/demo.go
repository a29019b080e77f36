package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
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
random fault points to show the same.`,
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
			if err := checkWritableDir("--out", out); err != nil {
				return err
			}
			if verify && events == 0 {
				return usagef("--verify needs a bounded run (--events > 0)")
			}
			env := weir.NewEnv(cfg)
			jf.apply(env, events)
			demo.Build(env, demo.Options{Events: events, Keys: keys, Rate: rate, Out: out})
			if err := jf.execute(env, "demo"); err != nil {
				return err
			}
			lines, err := file.ReadCommitted(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "committed %d lines in %s\n", len(lines), out)
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
	jf.register(c, "1s")
	return c
}

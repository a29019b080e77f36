package main

import (
	"github.com/spf13/cobra"

	"github.com/weirstream/weir/app"
)

// program is weir as an app.Program: the built-in jobs; newRoot adds the
// tools to its tree.
func program() *app.Program {
	return &app.Program{Name: "weir", Short: "weir: fault-tolerant stream processing in Go", Jobs: builtins()}
}

// builtins are the jobs weir runs and builds (run demo, run wordcount,
// run keyed-sum).
func builtins() []app.Job { return []app.Job{demoJob(), wordcountJob(), keyedSumJob()} }

// newRoot is the app tree plus weir's own commands: bench, tools,
// savepoint, stop, and checkpoints inspect beside checkpoints JOB.
func newRoot(p *app.Program) *cobra.Command {
	root := p.Command()
	benchCmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark with a same-run baseline",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown %s %q (see %s --help)", c.Name(), args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return usagef("%s needs a job name (see %s --help)", c.Name(), c.CommandPath())
		},
	}
	benchCmd.AddCommand(newKeyedSumBench(), newShuffleBench(), newSkewBench(), newBackpressureBench(), newStateBench())
	root.AddCommand(benchCmd, newToolsCmd(), newSavepointCmd(), newStopCmd())
	for _, c := range root.Commands() {
		if c.Name() == "checkpoints" {
			c.Short = "Show a job's checkpoints (from the JobManager), or inspect one on disk"
			c.AddCommand(newInspectCmd())
		}
	}
	return root
}

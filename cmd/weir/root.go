package main

import (
	"github.com/spf13/cobra"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "weir",
		Short:         "weir: fault-tolerant stream processing in Go",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v (see %s --help)", err, c.CommandPath())
	})
	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Run a built-in job",
	}
	runCmd.AddCommand(newDemoCmd(), newWordcountCmd())
	benchCmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark with a same-run baseline",
	}
	benchCmd.AddCommand(newKeyedSumBench(), newSkewBench(), newBackpressureBench(), newStateBench())
	root.AddCommand(runCmd, benchCmd, newToolsCmd(), newSavepointCmd(), newStopCmd(), newCheckpointsCmd())
	for _, c := range []*cobra.Command{runCmd, benchCmd} {
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown %s %q (see %s --help)", c.Name(), args[0], c.CommandPath())
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, _ []string) error {
			return usagef("%s needs a job name (see %s --help)", c.Name(), c.CommandPath())
		}
	}
	return root
}

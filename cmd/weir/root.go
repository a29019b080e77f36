package main

import (
	"github.com/spf13/cobra"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/bench"
)

// program is weir as an app.Program: the built-in jobs; newRoot adds the
// tools to its tree.
func program() *app.Program {
	return &app.Program{Name: "weir", Short: "weir: fault-tolerant stream processing in Go", Jobs: builtins()}
}

// builtins are the jobs weir runs and builds (run demo, run wordcount,
// run keyed-sum, run windows, run nexmark, run cdc).
func builtins() []app.Job {
	return []app.Job{demoJob(), wordcountJob(), keyedSumJob(), windowsJob(), nexmarkJob(), cdcJob()}
}

// newRoot is the app tree plus weir's own commands: bench, tools, and
// checkpoints inspect beside checkpoints JOB.
func newRoot(p *app.Program) *cobra.Command {
	root := p.Command()
	root.AddCommand(bench.Command(), newToolsCmd())
	for _, c := range root.Commands() {
		if c.Name() == "checkpoints" {
			c.Short = "Show a job's checkpoints (from the JobManager), or inspect one on disk"
			c.AddCommand(newInspectCmd())
		}
	}
	return root
}

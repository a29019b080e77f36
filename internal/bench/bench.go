// Package bench is `weir bench`: benchmarks of the engine, each against a
// baseline measured in the same run (a hand-written loop, the engine
// without checkpoints, or the same job in another deployment).
//
// Some benches run parts of themselves in child processes of the same
// binary (hidden --child-mode, --child and --work-dir flags): a mode's
// peak memory is then its own, and a cluster's processes are real ones.
// So Command must be mounted as `bench` on the root of the weir binary,
// whose run, jobmanager and taskmanager commands the children use.
//
// Owns: the benchmarks, their flags, JSON fields and output lines
// (contracts other tools read). Must not touch: the engine's internals
// beyond what a job can see; it measures through jobs, the public API and
// JobStatus.
package bench

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/vfs"
)

// Command is `weir bench` with one subcommand per benchmark.
func Command() *cobra.Command {
	c := &cobra.Command{
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
	c.AddCommand(newKeyedSumBench(), newShuffleBench(), newSkewBench(), newBackpressureBench(), newStateBench(), newWindowsBench(), newLatencyBench(), newNexmarkBench(), newWeakBench(), newRescaleBench())
	return c
}

// usagef is a usage error: exit code 2.
func usagef(format string, a ...any) error { return app.Usagef(format, a...) }

// checkWritableDir creates dir if needed and proves it writable.
func checkWritableDir(flag, dir string) error {
	if err := vfs.CheckWritableDir(dir); err != nil {
		return usagef("%s %s is not a writable folder: %v; choose another folder or fix its permissions", flag, dir, err)
	}
	return nil
}

// bytes renders a size for the benches' tables.
func bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// startCPUProfile starts a CPU profile into path (--cpuprofile) and returns
// the function that stops it; with an empty path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

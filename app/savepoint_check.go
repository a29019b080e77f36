package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

// savepointCheckCommand is `savepoint check JOB --from PATH`: it builds
// the job as `run JOB` would, with the same flags and configuration, and
// compares it with a checkpoint or savepoint, running nothing. It is the
// step before deploying a new version of a program (docs/compatibility.md).
func (p *Program) savepointCheckCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "check",
		Short: "Check, without running anything, that a job restores from a checkpoint or savepoint",
		Long: `check builds the job as 'run JOB' would (the job's flags, --config, -D) and
compares it with the checkpoint or savepoint at --from, as a restore does
before it deploys: operators by uid, max parallelism, in-flight records of
unaligned checkpoints, the key type of every keyed operator, and each state
the job declares (Stream.Declare) against the schema the checkpoint
recorded: identical, compatible, after migration (converted at restore),
new, dropped, or incompatible with the field and both types. States a job
registers without declaring them are listed as undeclared: the tasks check
them as they register them. The exit status is 0 when the job restores, 1
when it would not (with --strict also when a state is undeclared or the
checkpoint predates recorded schemas), 2 for bad flags. --json prints the
report as one JSON object. A job named check is 'savepoint check -- check'.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown job %q (see %s --help)", args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return Usagef("savepoint check needs a job name (see %s --help)", c.CommandPath())
		},
	}
	c.FParseErrWhitelist.UnknownFlags = true
	for _, j := range p.Jobs {
		c.AddCommand(p.checkJobCommand(j))
	}
	return c
}

func (p *Program) checkJobCommand(j Job) *cobra.Command {
	var cf configFlags
	var asJSON, strict bool
	c := &cobra.Command{Use: j.Name, Short: "Check " + j.Name + " against --from", Args: cobra.NoArgs}
	fs := c.Flags()
	run := j.Define(fs)
	cf.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&strict, "strict", false, "fail also on states the job does not declare and on checkpoints without recorded schemas")
	// The job may define --from and --allow-non-restored-state itself (as
	// weir's built-in jobs do, for run): then those are the ones.
	var from string
	var allow bool
	if fs.Lookup("from") == nil {
		fs.StringVar(&from, "from", "", "the checkpoint (chk-N folder or its _metadata) or savepoint to check against (required)")
		MarkPath(fs, "from")
	}
	if fs.Lookup("allow-non-restored-state") == nil {
		fs.BoolVar(&allow, "allow-non-restored-state", false, "accept dropping state the job no longer has, as run would")
	}
	c.RunE = func(c *cobra.Command, _ []string) error {
		path := flagString(fs, "from")
		if path == "" {
			return Usagef("--from is required: the checkpoint or savepoint to check against")
		}
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		ctx := c.Context()
		if run.Configure != nil {
			if err := run.Configure(ctx, cfg); err != nil {
				return err
			}
		}
		env := weir.NewEnv(weir.WithConfig(cfg))
		if err := run.Build(env); err != nil {
			return err
		}
		var rep *runtime.SavepointReport
		hooks.Plan(env).Executor = func(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig) error {
			jc.AllowNonRestoredState = jc.AllowNonRestoredState || flagBool(fs, "allow-non-restored-state")
			var err error
			rep, err = runtime.CheckSavepoint(ctx, g, jc, path)
			return err
		}
		if err := env.Execute(ctx, j.Name); err != nil {
			var jf *weir.JobFailedError
			if errors.As(err, &jf) {
				err = jf.Cause
			}
			return fmt.Errorf("savepoint check %s: %w", path, err)
		}
		if asJSON {
			enc := json.NewEncoder(p.stdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			printSavepointReport(p.stdout(), rep)
		}
		if n := blocking(rep, strict); n > 0 {
			return fmt.Errorf("savepoint check %s: INCOMPATIBLE: %d finding(s) would fail the restore", path, n)
		}
		return nil
	}
	return c
}

func flagString(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func flagBool(fs *pflag.FlagSet, name string) bool { return flagString(fs, name) == "true" }

// blocking counts what fails a restore: the report's problems and
// incompatible states, and with strict the undeclared and unknown ones.
func blocking(rep *runtime.SavepointReport, strict bool) int {
	n := len(rep.Problems)
	for _, op := range rep.Operators {
		for _, s := range op.States {
			if s.Error != "" || strict && (s.Result == runtime.Undeclared || s.Result == "unknown") {
				n++
			}
		}
	}
	return n
}

// printSavepointReport writes the report for people: one block per
// operator, then the problems and the result.
func printSavepointReport(w io.Writer, rep *runtime.SavepointReport) {
	fmt.Fprintf(w, "checkpoint %d at %s\n", rep.Checkpoint, rep.Path)
	for _, op := range rep.Operators {
		where := "in the job and the checkpoint"
		switch {
		case !op.InJob:
			where = "in the checkpoint only"
		case !op.InCheckpoint:
			where = "in the job only: starts empty"
		}
		fmt.Fprintf(w, "operator %s", op.UID)
		if op.Name != "" {
			fmt.Fprintf(w, " (%s)", op.Name)
		}
		fmt.Fprintf(w, ": %s, parallelism %s -> %s\n", where, orNone(op.Parallelism[0]), orNone(op.Parallelism[1]))
		for _, s := range op.States {
			typ := s.Program
			if typ == "" {
				typ = s.Stored
			}
			fmt.Fprintf(w, "  %-9s %-24q %-16s %s\n", s.Scope, s.Name, s.Result, typ)
			if s.Error != "" {
				fmt.Fprintf(w, "    %s\n", s.Error)
			}
		}
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(w, "problem: %s\n", pr)
	}
	fmt.Fprintf(w, "result: %s\n", strings.ToUpper(rep.Result))
}

func orNone(p int) string {
	if p == 0 {
		return "none"
	}
	return fmt.Sprint(p)
}

package app

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

// runCommand is `run`, with one subcommand per job.
func (p *Program) runCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "run",
		Short: "Run a job locally, or submit it to a JobManager with --jobmanager",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown run %q (see %s --help)", args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return Usagef("run needs a job name (see %s --help)", c.CommandPath())
		},
	}
	// An unknown job's flags are not run's: name the job, not a flag.
	c.FParseErrWhitelist.UnknownFlags = true
	for _, j := range p.Jobs {
		c.AddCommand(p.jobCommand(j))
	}
	return c
}

// launchFlags are app's flags of a run command.
type launchFlags struct {
	client   clientFlags
	detached bool
	jobName  string
	config   configFlags
}

// jobCommand is `run NAME`.
func (p *Program) jobCommand(j Job) *cobra.Command {
	var lf launchFlags
	c := &cobra.Command{
		Use:         j.Name,
		Short:       j.Short,
		Long:        j.Long,
		Args:        cobra.NoArgs,
		Annotations: envAnnotation,
	}
	fs := c.Flags()
	run := j.Define(fs)
	var jobFlags []string
	fs.VisitAll(func(f *pflag.Flag) { jobFlags = append(jobFlags, f.Name) })
	lf.client.register(fs, "", "submit the job to the JobManager at HOST:PORT and follow it, instead of running it in this process")
	fs.BoolVar(&lf.detached, "detached", false, "with --jobmanager: print the job id once submitted and return, instead of following the job")
	fs.StringVar(&lf.jobName, "job-name", j.Name, "the job's name: its checkpoint folder and, in a cluster, its id (unique per cluster)")
	lf.config.register(fs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if lf.detached && lf.client.jobmanager == "" {
			return Usagef("--detached needs --jobmanager: a local run always waits for its job")
		}
		if err := runtime.ValidateJobName(lf.jobName); err != nil {
			return Usagef("--job-name: %v", err)
		}
		cfg, err := lf.config.load()
		if err != nil {
			return err
		}
		if lf.client.jobmanager != "" {
			if err := refuseLocalOnly(fs, jobFlags); err != nil {
				return err
			}
		}
		ctx := c.Context()
		if run.Configure != nil {
			if err := run.Configure(ctx, cfg); err != nil {
				return err
			}
		}
		if lf.client.jobmanager == "" {
			return p.runLocal(ctx, lf.jobName, cfg, run)
		}
		args, err := normalizeArgs(fs, jobFlags, chooseSeed)
		if err != nil {
			return err
		}
		conf, err := normalizeConfig(hooks.Config(cfg))
		if err != nil {
			return err
		}
		spec := runtime.JobSpec{Name: lf.jobName, Kind: j.Name, Args: args, Config: conf}
		return p.submit(ctx, &lf, spec, cfg, run)
	}
	return c
}

// refuseLocalOnly fails if a flag marked MarkLocalOnly was given.
func refuseLocalOnly(fs *pflag.FlagSet, names []string) error {
	for _, n := range names {
		f := fs.Lookup(n)
		if why := annotation(f, annotationLocalOnly); why != "" && f.Changed {
			return Usagef("--%s works in a local run only, not with --jobmanager: %s", n, why)
		}
	}
	return nil
}

// chooseSeed picks a non-zero seed for a seed flag left at 0.
func chooseSeed() int64 {
	var b [8]byte
	rand.Read(b[:])
	if s := int64(binary.LittleEndian.Uint64(b[:]) >> 1); s != 0 {
		return s
	}
	return 1
}

// runLocal builds and executes the job in this process until it ends or
// SIGINT/SIGTERM arrives.
func (p *Program) runLocal(ctx context.Context, name string, cfg *weir.Config, run Run) error {
	env := weir.NewEnv(weir.WithConfig(cfg))
	if err := run.Build(env); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	exec := run.Execute
	if exec == nil {
		exec = func(ctx context.Context, env *weir.Env, name string) error { return env.Execute(ctx, name) }
	}
	if err := exec(ctx, env, name); err != nil {
		return err
	}
	if run.Finish != nil {
		return run.Finish(ctx, cfg)
	}
	return nil
}

// submit builds the job once here (a job that does not build fails before
// it reaches the cluster), submits it and, unless detached, follows it to
// its end.
func (p *Program) submit(ctx context.Context, lf *launchFlags, spec runtime.JobSpec, cfg *weir.Config, run Run) error {
	if err := spec.Validate(); err != nil {
		return UsageError{err}
	}
	if _, _, err := p.resolve(ctx, spec); err != nil {
		return fmt.Errorf("%w (checked before submitting)", err)
	}
	c, err := lf.client.dial(ctx, p)
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := c.Submit(ctx, spec)
	if err != nil {
		return err
	}
	if lf.detached {
		fmt.Fprintln(p.stdout(), id)
		return nil
	}
	fmt.Fprintf(p.stderr(), "job %s submitted to %s\n", id, c.Address())
	wctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	state := ""
	last, err := c.Wait(wctx, id, func(u *pb.JobUpdate) {
		if u.GetState() != state {
			state = u.GetState()
			fmt.Fprintf(p.stderr(), "job %s: %s\n", id, state)
		}
	})
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("stopped following job %s; it keeps running on the JobManager at %s (`%s cancel %s --jobmanager %s` cancels it)",
				id, c.Address(), p.name(), id, c.Address())
		}
		return err
	}
	return p.finished(ctx, id, last, cfg, run)
}

// ErrJobNotFinished is wrapped by the error of an attached run whose job
// ended in another state than FINISHED.
var ErrJobNotFinished = errors.New("job did not finish")

// finished maps a terminal update to the command's result.
func (p *Program) finished(ctx context.Context, id string, u *pb.JobUpdate, cfg *weir.Config, run Run) error {
	if u.GetState() != "FINISHED" {
		cause := u.GetFailure()
		if cause == "" {
			cause = "no cause reported"
		}
		return jobEndError{fmt.Sprintf("job %s %s: %s", id, u.GetState(), cause)}
	}
	if run.Finish != nil {
		return run.Finish(ctx, cfg)
	}
	return nil
}

// jobEndError is an attached run's error for a job that ended otherwise
// than FINISHED; it is ErrJobNotFinished.
type jobEndError struct{ msg string }

func (e jobEndError) Error() string        { return e.msg }
func (e jobEndError) Is(target error) bool { return target == ErrJobNotFinished }

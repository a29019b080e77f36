package app

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
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
	rest     restFlags
	quiet    bool
	// rerun runs a job whose folder records a run that FINISHED from
	// scratch again (runtime.CheckFinished), in this process or on the
	// cluster it is submitted to.
	rerun bool
}

// register adds app's flags of a run command to fs.
func (lf *launchFlags) register(fs *pflag.FlagSet, jobName string) {
	lf.client.register(fs, "", "submit the job to the JobManager at HOST:PORT and follow it, instead of running it in this process; a comma-separated list names several JobManagers (high availability: the leader is found among them, and with high-availability.type: etcd in --config/-D, in etcd first)")
	fs.BoolVar(&lf.detached, "detached", false, "with --jobmanager: print the job id once submitted and return, instead of following the job")
	fs.StringVar(&lf.jobName, "job-name", jobName, "the job's name: its checkpoint folder and, in a cluster, its id (unique per cluster)")
	lf.config.register(fs)
	lf.rest.register(fs)
	fs.BoolVarP(&lf.quiet, "quiet", "q", false, "no progress line in a local run")
	fs.BoolVar(&lf.rerun, "rerun", false, "run the job from scratch although its checkpoint folder records a run of it that FINISHED, writing its whole output again (without it such a run is refused)")
}

// refuseLocalOnly fails if a flag of a local run is given with
// --jobmanager.
func (lf *launchFlags) refuseLocalOnly(fs *pflag.FlagSet, prog string) error {
	for _, n := range []string{"rest-address", "rest-allow-remote"} {
		if fs.Changed(n) {
			return Usagef("--%s works in a local run only, not with --jobmanager: in a cluster the JobManager serves the REST API (%s jobmanager --rest-address)", n, prog)
		}
	}
	return nil
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
	lf.register(fs, j.Name)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if lf.detached && lf.client.jobmanager == "" {
			return Usagef("--detached needs --jobmanager: a local run always waits for its job")
		}
		if err := deployment.ValidateJobName(lf.jobName); err != nil {
			return Usagef("--job-name: %v", err)
		}
		cfg, err := lf.config.load()
		if err != nil {
			return err
		}
		if hooks.Config(cfg).String(config.SchedulerMode) == config.SchedulerReactive {
			if lf.client.jobmanager == "" {
				return Usagef("scheduler-mode reactive scales a job to the slots of a cluster's TaskManagers; a local run has a fixed set (minicluster.number-of-taskmanagers): leave it out here, or start weir jobmanager with -D scheduler-mode=reactive and submit with --jobmanager")
			}
			return Usagef("scheduler-mode is the JobManager's, not a job's: start weir jobmanager with -D scheduler-mode=reactive (its jobs then run on every slot) and submit without it")
		}
		if lf.client.jobmanager != "" {
			if err := refuseLocalOnly(fs, jobFlags); err != nil {
				return err
			}
			if err := lf.refuseLocalOnly(fs, p.name()); err != nil {
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
			return p.runLocal(ctx, &lf, fs, cfg, run)
		}
		args, err := normalizeArgs(fs, jobFlags, chooseSeed)
		if err != nil {
			return err
		}
		conf, err := normalizeConfig(hooks.Config(cfg))
		if err != nil {
			return err
		}
		spec := deployment.JobSpec{Name: lf.jobName, Kind: j.Name, Args: args, Config: conf}
		return p.submit(ctx, &lf, fs, spec, cfg, run)
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
// SIGINT/SIGTERM arrives, with the REST API (--rest-address) and the
// progress line (unless --quiet) while it runs and the summary after.
// Its logs aggregate repeated warnings (internal/logagg); the pending
// summaries are written before the run's summary.
func (p *Program) runLocal(ctx context.Context, lf *launchFlags, fs *pflag.FlagSet, cfg *weir.Config, run Run) error {
	name := lf.jobName
	env := weir.NewEnv(weir.WithConfig(cfg))
	if err := run.Build(env); err != nil {
		return err
	}
	jobLog, endJobLog := aggregated(hooks.Plan(env).Logger.Handler())
	defer endJobLog()
	hooks.Plan(env).Logger = jobLog
	restLog, endRESTLog := p.localLogger()
	defer endRESTLog()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancelJob := context.WithCancel(ctx)
	defer cancelJob()
	var canceled atomic.Bool
	cancel := func() { canceled.Store(true); cancelJob() }
	stopREST, err := lf.rest.startREST(env, name, cancel, restLog, p.stderr())
	if err != nil {
		return err
	}
	defer stopREST()
	exec := run.Execute
	if exec == nil {
		exec = func(ctx context.Context, env *weir.Env, name string) error { return env.Execute(ctx, name) }
	}
	// finished is the configuration of the job once it FINISHED: its
	// checkpoints are discarded last, after the report, so a run killed
	// while it reports resumes the final checkpoint (committing nothing
	// new) and reports again.
	var finished *runtime.JobConfig
	// storage is the job's checkpoint folder, for the summary.
	var storage string
	local := func(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig) error {
		jc.Rerun = lf.rerun
		storage = storageLocation(jc, hooks.Config(cfg).String(config.CheckpointsDir))
		source, overridden := lf.storageSource(fs, cfg)
		if err := p.executeLocal(ctx, g, jc, storageLine(storage, source, overridden)); err != nil {
			return err
		}
		finished = &jc
		return nil
	}
	prog := startProgress(p.stderr(), jobStatus(env), weakMode(env.Config()), lf.quiet)
	hooks.Plan(env).Executor = local
	err = exec(ctx, env, name)
	prog.finish()
	endJobLog()
	summary := prog.summary()
	if storage != "" {
		summary += "; checkpoint storage " + storage
	}
	fmt.Fprintln(p.stderr(), summary)
	if w := prog.weakSummary(); w != "" {
		fmt.Fprintln(p.stderr(), w)
	}
	if run.Summary != nil {
		fmt.Fprint(p.stderr(), run.Summary())
	}
	if err != nil && canceled.Load() {
		return jobEndError{fmt.Sprintf("job %s CANCELED: canceled through the REST API", name)}
	}
	if err == nil && run.Finish != nil {
		out := Outcome{Config: cfg}
		if weakMode(env.Config()) {
			out.Weak = weakFiguresOf(&jobStatus(env).Weak)
		}
		err = run.Finish(ctx, out)
	}
	if finished != nil {
		p.discardFinished(*finished)
	}
	return err
}

// executeLocal runs the job in this process as env.Execute would:
// refused if its folder records a run that FINISHED and it would start
// from scratch without --rerun (runtime.CheckFinished); saying first
// where it starts (from scratch, from --from, or resuming the
// checkpoint an unfinished earlier run left), then storage, the line
// naming its checkpoint storage and where that came from.
func (p *Program) executeLocal(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig, storage string) error {
	note, err := runtime.CheckFinished(jc)
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(p.stderr(), note)
	}
	line, err := runtime.StartLine(jc)
	if err != nil {
		return fmt.Errorf("job %s: look for checkpoints to resume: %w", jc.JobName, err)
	}
	fmt.Fprintln(p.stderr(), line)
	fmt.Fprintln(p.stderr(), storage)
	return runtime.Execute(ctx, g, jc)
}

// discardFinished records a job that FINISHED in its folder and removes
// its checkpoints: a job that finished is not resumed, and the next run
// with its name from scratch is refused unless --rerun
// (docs/guarantees.md, "Running a job again"), as on a cluster.
func (p *Program) discardFinished(jc runtime.JobConfig) {
	if err := runtime.RecordFinished(jc); err != nil {
		// The output is committed; what is left only makes the next run
		// resume the final checkpoint, which commits nothing new.
		fmt.Fprintf(p.stderr(), "%s: warning: job %s finished, but %v\n", p.name(), jc.JobName, err)
	}
}

// localLogger is the REST API's logger in a local run: warnings, or
// everything with WEIR_DEBUG set; repeated warnings are aggregated until
// end.
func (p *Program) localLogger() (log *slog.Logger, end func()) {
	level := slog.LevelWarn
	if p.getenv("WEIR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return aggregated(slog.NewTextHandler(p.stderr(), &slog.HandlerOptions{Level: level}))
}

// submit builds the job once here (a job that does not build fails before
// it reaches the cluster), submits it and, unless detached, follows it to
// its end.
func (p *Program) submit(ctx context.Context, lf *launchFlags, fs *pflag.FlagSet, spec deployment.JobSpec, cfg *weir.Config, run Run) error {
	if err := spec.Validate(); err != nil {
		return UsageError{err}
	}
	if _, _, err := p.resolve(ctx, spec); err != nil {
		return fmt.Errorf("%w (checked before submitting)", err)
	}
	c, err := lf.client.dial(ctx, p, fs, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	var sopts []cluster.SubmitOption
	if lf.rerun {
		sopts = append(sopts, cluster.Rerun())
	}
	id, err := c.Submit(ctx, spec, sopts...)
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
	out := Outcome{Config: cfg}
	if w := last.GetWeak(); w != nil {
		out.Weak = weakFiguresFrom(w)
		fmt.Fprintln(p.stderr(), out.Weak.line())
	}
	return p.finished(ctx, id, last, out, run)
}

// ErrJobNotFinished is wrapped by the error of an attached run whose job
// ended in another state than FINISHED.
var ErrJobNotFinished = errors.New("job did not finish")

// finished maps a terminal update to the command's result.
func (p *Program) finished(ctx context.Context, id string, u *pb.JobUpdate, out Outcome, run Run) error {
	if u.GetState() != "FINISHED" {
		cause := u.GetFailure()
		if cause == "" {
			cause = "no cause reported"
		}
		return jobEndError{fmt.Sprintf("job %s %s: %s", id, u.GetState(), cause)}
	}
	if run.Finish != nil {
		return run.Finish(ctx, out)
	}
	return nil
}

// jobEndError is an attached run's error for a job that ended otherwise
// than FINISHED; it is ErrJobNotFinished.
type jobEndError struct{ msg string }

func (e jobEndError) Error() string        { return e.msg }
func (e jobEndError) Is(target error) bool { return target == ErrJobNotFinished }

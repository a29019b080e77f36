package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/plan"
	"github.com/weirstream/weir/internal/runtime"
)

// Env is where a job is assembled and started. Sources, transformations
// and sinks added to it (FromSource, Map, SinkTo, …) form the job's graph;
// Start runs it. An Env runs one job at a time: Start fails while the
// Env's previous job runs, and starts the same graph again once it ended.
type Env struct {
	p   *plan.Plan
	cfg *Config

	mu      sync.Mutex
	running *Job // the job Start returned last; nil before the first

	// sideTypes is the record type read from each side output, by node
	// and tag id: one tag id, one type.
	sideTypes map[sideKey]reflect.Type
}

type sideKey struct {
	node int
	tag  string
}

// errEnvBusy is Start's error while the Env's previous job still runs.
var errEnvBusy = errors.New("the previous job of this Env is still running: an Env runs one job at a time")

func init() {
	hooks.Register(
		func(v any) *plan.Plan {
			switch v := v.(type) {
			case *Env:
				return v.p
			case *Job:
				return v.env.p
			}
			panic("hooks.Plan: not a *weir.Env or *weir.Job")
		},
		func(v any) *config.Config { return v.(*Config).engine() },
	)
}

// Option configures an Env in NewEnv.
type Option struct {
	apply func(*envOptions)
}

type envOptions struct {
	cfg              *Config
	logger           *slog.Logger
	from             string
	allowNonRestored bool
	rerun            bool
	sets             [][2]string // typed options' keys, applied on top of cfg
}

// WithConfig makes the Env use cfg (default: NewConfig()). The Env keeps
// cfg, and the options that set configuration keys (WithParallelism, …)
// set them on it, wherever they stand among the options.
func WithConfig(cfg *Config) Option { return Option{func(o *envOptions) { o.cfg = cfg }} }

// WithLogger sets the structured logger of the job. Without it the job
// logs its warnings and errors (a failed task, a restart, a declined
// checkpoint, data loss) through slog.Default(), read at each record, and
// nothing below Warn: a job never fails silently.
func WithLogger(l *slog.Logger) Option { return Option{func(o *envOptions) { o.logger = l }} }

// WithRestoreFrom makes the job start from the given checkpoint or savepoint
// (a chk-N or savepoint folder, its _metadata file, or an s3:// URL of
// one) instead of the newest retained checkpoint of a job of its name.
func WithRestoreFrom(path string) Option { return Option{func(o *envOptions) { o.from = path }} }

// WithAllowNonRestoredState makes a restore skip checkpointed state of
// operators the job no longer has, and drop keyed state that an operator
// no longer registers, instead of failing.
func WithAllowNonRestoredState() Option {
	return Option{func(o *envOptions) { o.allowNonRestored = true }}
}

// WithRerunFinished lets the job run from scratch although its checkpoint
// folder records a run of it that FINISHED, writing its whole output to
// its sinks again (the command line's --rerun). Without it such a run
// fails before it starts, naming that run (docs/guarantees.md, "Running a
// job again"); WithRestoreFrom, another checkpoint folder or another job name
// are the other ways forward.
func WithRerunFinished() Option { return Option{func(o *envOptions) { o.rerun = true }} }

// WithParallelism sets ParallelismDefault, the parallelism of operators
// that do not set their own.
func WithParallelism(n int) Option { return setKey(ParallelismDefault, strconv.Itoa(n)) }

// WithCheckpointInterval sets CheckpointingInterval; 0 turns periodic
// checkpoints off.
func WithCheckpointInterval(d time.Duration) Option {
	return setKey(CheckpointingInterval, config.FormatDuration(d))
}

// WithCheckpointDir sets CheckpointsDir, where checkpoints are stored (a
// local folder, file:// path or s3://bucket/prefix URL).
func WithCheckpointDir(dir string) Option { return setKey(CheckpointsDir, dir) }

func setKey(key, value string) Option {
	return Option{func(o *envOptions) { o.sets = append(o.sets, [2]string{key, value}) }}
}

// NewEnv returns an environment configured by opts. A configuration value
// set by an option that does not validate makes Start fail, naming it.
func NewEnv(opts ...Option) *Env {
	var o envOptions
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	if o.cfg == nil {
		o.cfg = NewConfig()
	}
	e := &Env{p: plan.New(o.cfg.engine()), cfg: o.cfg}
	e.p.FromPath, e.p.AllowNonRestoredState, e.p.Rerun = o.from, o.allowNonRestored, o.rerun
	if o.logger != nil {
		e.p.Logger = o.logger
	}
	for _, kv := range o.sets {
		if err := o.cfg.Set(kv[0], kv[1]); err != nil {
			e.p.Fail(err)
		}
	}
	return e
}

// Config returns the environment's configuration, for job builders that
// read keys.
func (e *Env) Config() *Config { return e.cfg }

func (e *Env) fail(err error) { e.p.Fail(err) }

// Start checks the job and starts it under name; it runs until it ends
// (bounded sources), fails for good, is stopped or cancelled through the
// returned Job, or ctx is cancelled. Problems of the graph or the
// configuration are returned here, before anything runs. A job started
// with the name and CheckpointsDir of an earlier one resumes from that
// job's newest retained checkpoint.
func (e *Env) Start(ctx context.Context, name string) (*Job, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev := e.running; prev != nil {
		select {
		case <-prev.done:
		default:
			return nil, fmt.Errorf("start job %q: %w", name, errEnvBusy)
		}
	}
	g, jc, err := e.p.Resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	// The status is the Env's (app's progress line and REST API hold it
	// before they start the job), so a second run starts it over; the
	// previous Job keeps its final Stats.
	e.p.ResetStatus()
	ctx, cancel := context.WithCancel(ctx)
	j := &Job{env: e, name: name, status: e.p.Status, control: e.p.Control, cancel: cancel, done: make(chan struct{})}
	e.running = j
	go func() {
		defer close(j.done)
		defer cancel()
		exec := e.p.Executor
		if exec == nil {
			exec = func(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig) error {
				return plan.RunLocal(ctx, g, jc, e.p.Logger)
			}
		}
		j.err = publicError(exec(ctx, g, jc))
		j.ended(j.err)
	}()
	return j, nil
}

// Execute starts the job and waits for its end: Start followed by
// Job.Wait.
func (e *Env) Execute(ctx context.Context, name string) error {
	j, err := e.Start(ctx, name)
	if err != nil {
		return err
	}
	return j.Wait()
}

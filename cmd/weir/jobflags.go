package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// jobFlags are the flags every built-in job shares.
type jobFlags struct {
	parallelism      int
	interval         string
	stateDir         string
	stateBackend     string
	from             string
	allowNonRestored bool
	injectFailures   int
	faultPoints      []string
	faultSeed        int64
	verbose          bool
	inj              *faults.Injector
}

// faultSummary reports the injected failures, if any were planned.
func (f *jobFlags) faultSummary() string {
	if f.inj == nil {
		return ""
	}
	s := fmt.Sprintf("injected failures: %d of %d fired", f.inj.Fired(), f.injectFailures)
	counts := map[faults.Point]int{}
	for _, x := range f.inj.Log() {
		counts[x.Point]++
	}
	for _, p := range faults.AllPoints() {
		if counts[p] > 0 {
			s += fmt.Sprintf(", %s %d", p, counts[p])
		}
	}
	return s + "\n"
}

// register adds the flags to fs. --config, -D, --rest-address and
// --quiet belong to the app package (every run command has them). The
// flags that stand for configuration keys are client-only: configure
// folds them into the configuration, which travels with a submitted job.
func (f *jobFlags) register(fs *pflag.FlagSet, defaultInterval string) {
	fs.IntVarP(&f.parallelism, "parallelism", "p", 1, "parallel subtasks per operator (parallelism.default)")
	fs.StringVar(&f.interval, "checkpoint-interval", defaultInterval, "time between checkpoints, e.g. 100ms, 10s; 0 disables periodic checkpoints (execution.checkpointing.interval)")
	fs.StringVar(&f.stateDir, "state-dir", "./weir-data", "folder for checkpoints (state.checkpoints.dir); a run started again with the same folder resumes")
	fs.StringVar(&f.stateBackend, "state-backend", "heap", "keyed state backend: heap (in memory) or lsm (Pebble on local disk, state can exceed memory); checkpoints of both are interchangeable (state.backend.type)")
	fs.StringVar(&f.from, "from", "", "start from this checkpoint or savepoint (a chk-N folder, its _metadata, or a savepoint folder) instead of the newest retained one")
	fs.StringVar(&f.from, "from-savepoint", "", "same as --from")
	fs.BoolVar(&f.allowNonRestored, "allow-non-restored-state", false, "ignore checkpointed state of operators the job no longer has")
	fs.IntVar(&f.injectFailures, "inject-failures", 0, "make this many task failures happen at random moments and fault points (testing)")
	fs.StringSliceVar(&f.faultPoints, "fault-points", nil, "restrict --inject-failures to these fault points (comma-separated: "+pointNames()+"; default all)")
	fs.Int64Var(&f.faultSeed, "fault-seed", 0, "seed for --inject-failures (0: from the clock)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log checkpoints and restores")
	for name, key := range map[string]string{
		"parallelism":         config.ParallelismDefault,
		"checkpoint-interval": config.CheckpointingInterval,
		"state-dir":           config.CheckpointsDir,
		"state-backend":       config.StateBackendType,
	} {
		app.MarkClientOnly(fs, name)
		app.MarkConfigKey(fs, name, key)
	}
	app.MarkPath(fs, "from")
	app.MarkPath(fs, "from-savepoint")
	app.MarkSeed(fs, "fault-seed")
}

// configure completes the configuration: cfg holds the defaults, then the
// YAML file, then -D overrides (the app package loads them); explicit flags
// go on top. Every problem is a usage error (exit code 2) that names the
// flag, key or path.
func (f *jobFlags) configure(fl *pflag.FlagSet, cfg *weir.Config) error {
	if err := refuseIneffective(fl, f.ineffective(fl)...); err != nil {
		return err
	}
	if fl.Changed("parallelism") || !cfg.IsSet(config.ParallelismDefault) {
		if f.parallelism < 1 {
			return usagef("--parallelism must be at least 1, got %d", f.parallelism)
		}
		if err := cfg.Set(config.ParallelismDefault, fmt.Sprint(f.parallelism)); err != nil {
			return usagef("--parallelism: %v", err)
		}
	}
	if fl.Changed("checkpoint-interval") || !cfg.IsSet(config.CheckpointingInterval) {
		d, err := config.ParseDuration(f.interval)
		if err != nil {
			return usagef("--checkpoint-interval %q: %v", f.interval, err)
		}
		if err := cfg.Set(config.CheckpointingInterval, fmt.Sprintf("%dms", d.Milliseconds())); err != nil {
			return usagef("--checkpoint-interval: %v", err)
		}
	}
	// A job submitted to a cluster without a folder of its own keeps its
	// checkpoints where the JobManager says (its --state-dir/checkpoints),
	// not in a folder named after the client's working directory.
	submitted := fl.Lookup("jobmanager") != nil && fl.Lookup("jobmanager").Changed
	if fl.Changed("state-dir") || !cfg.IsSet(config.CheckpointsDir) && !submitted {
		if err := cfg.Set(config.CheckpointsDir, f.stateDir); err != nil {
			return usagef("--state-dir: %v", err)
		}
	}
	if fl.Changed("state-backend") {
		if err := cfg.Set(config.StateBackendType, f.stateBackend); err != nil {
			return usagef("--state-backend: %v", err)
		}
	}
	if cfg.IsSet(config.CheckpointsDir) || !submitted {
		if err := checkWritableDir("--state-dir", hooks.Config(cfg).String(config.CheckpointsDir)); err != nil {
			return err
		}
	}
	if f.injectFailures < 0 {
		return usagef("--inject-failures must not be negative, got %d", f.injectFailures)
	}
	if _, err := f.parsePoints(); err != nil {
		return err
	}
	if f.from != "" {
		fsys, p, err := openLocation(context.Background(), hooks.Config(cfg), f.from)
		if err != nil {
			return usagef("--from %s: %v", f.from, err)
		}
		if _, err := fsys.Stat(p); err != nil {
			return usagef("--from: %v", err)
		}
		// Verify it before any work starts: a folder that is not a
		// checkpoint, or a corrupt one, is a usage error naming the path.
		if _, _, err := storage.LoadPath(context.Background(), p, storage.WithFS(fsys)); err != nil {
			return usagef("--from %s: %v", f.from, err)
		}
	}
	return nil
}

// ineffective lists the shared flags that have no effect in some
// combination (see refuseIneffective).
func (f *jobFlags) ineffective(fl *pflag.FlagSet) []ineffective {
	return []ineffective{
		{flag: "fault-points", when: f.injectFailures == 0, where: "without --inject-failures",
			instead: "it only restricts where injected failures happen; add --inject-failures N, or drop --fault-points"},
		{flag: "fault-seed", when: f.injectFailures == 0, where: "without --inject-failures",
			instead: "it only seeds when and where injected failures happen; add --inject-failures N, or drop --fault-seed"},
		// Both flags write one variable: the later on the command line
		// would silently win.
		{flag: "from-savepoint", when: fl.Changed("from"), where: "together with --from",
			instead: "both name the checkpoint or savepoint to start from and only the later one would count; give one of them"},
	}
}

// verifyDetached is the rule for a job's --verify with --detached: the
// client returns once the job is submitted, before anything is committed,
// so there is nothing to verify (Run.Finish runs in an attached client
// only).
func verifyDetached(fl *pflag.FlagSet) ineffective {
	detached := fl.Lookup("detached") != nil && fl.Lookup("detached").Value.String() == "true"
	return ineffective{flag: "verify", when: detached, where: "with --detached",
		instead: "a detached client returns once the job is submitted and checks nothing; drop --detached to follow the job and verify its output when it FINISHED"}
}

// quickRestarts makes injected failures restart fast unless the user chose
// a restart strategy: with Flink's default backoff (1 s growing to 1 min),
// twenty injected failures would mostly measure waiting.
func (f *jobFlags) quickRestarts(cfg *weir.Config) error {
	if f.injectFailures == 0 || cfg.IsSet(config.RestartStrategyType) {
		return nil
	}
	for k, v := range map[string]string{
		config.RestartStrategyType:                 config.RestartExpDelay,
		config.ExponentialDelayInitialBackoff:      "10ms",
		config.ExponentialDelayMaxBackoff:          "1s",
		config.ExponentialDelayAttemptsBeforeReset: fmt.Sprint(f.injectFailures + 10),
	} {
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (f *jobFlags) logger() *slog.Logger {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	if os.Getenv("WEIR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// apply wires logging, fault injection and restore flags into env.
func (f *jobFlags) apply(env *weir.Env, span int64) {
	hooks.Plan(env).Logger = f.logger()
	if f.injectFailures > 0 {
		seed := f.faultSeed
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		if span < 2 {
			span = 10_000_000
		}
		// Checked by configure where the job was launched.
		points, _ := f.parsePoints()
		f.inj = faults.New(faults.Plan{Failures: f.injectFailures, Seed: seed, Span: span, Points: points, OnePerAttempt: true})
		hooks.Plan(env).Faults = f.inj
		fmt.Fprintf(os.Stderr, "injecting %d failures (--fault-seed %d)\n", f.injectFailures, seed)
	}
	hooks.Plan(env).FromPath, hooks.Plan(env).AllowNonRestoredState = f.from, f.allowNonRestored
}

// parsePoints parses --fault-points; nil means every point.
func (f *jobFlags) parsePoints() ([]faults.Point, error) {
	var points []faults.Point
	for _, name := range f.faultPoints {
		p, err := faults.ParsePoint(name)
		if err != nil {
			return nil, usagef("--fault-points: %v", err)
		}
		points = append(points, p)
	}
	return points, nil
}

// pointNames lists the fault points for help and errors.
func pointNames() string {
	var names []string
	for _, p := range faults.AllPoints() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// checkWritableDir creates dir if needed and proves it writable.
func checkWritableDir(flag, dir string) error {
	if dir == "" {
		return usagef("%s is empty", flag)
	}
	if s3fs.IsURL(dir) {
		// Probed with the job's S3 settings when the job starts.
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("%s %s: cannot create the folder: %v", flag, dir, err)
	}
	if err := vfs.CheckWritableDir(dir); err != nil {
		return usagef("%s %s is not writable: %v; choose another folder or fix its permissions", flag, dir, err)
	}
	return nil
}

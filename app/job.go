package app

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
)

// Job is a job a program can run, submit or build for a cluster.
type Job struct {
	// Name is the job's kind: the word after run (prog run NAME) and the
	// builder's name in the cluster (the kind of the submitted spec). It is also
	// the default job name (--job-name).
	Name string
	// Short and Long are the run command's help texts.
	Short, Long string
	// Define registers the job's own flags on fs and returns the Run bound
	// to their values. app calls it once per command line and once per
	// build, since a JobManager may build several jobs at once: keep the
	// values in the closure, never in globals. The flag names config,
	// define (-D), jobmanager, detached, job-name, connect-timeout,
	// rest-address, rest-allow-remote and quiet (-q) belong to app.
	Define func(fs *pflag.FlagSet) Run
}

// Run is one instance of a job, bound to its parsed flags. Only Build is
// required.
type Run struct {
	// Configure runs where the job is launched (a local run, or the client
	// before it submits), never in the cluster's roles: it checks the flag
	// values and sets the configuration keys they stand for on cfg, which
	// already holds --config and -D. Its errors should be UsageErrors. The
	// keys set explicitly on cfg travel with the job, so Build sees the
	// same configuration in every role.
	Configure func(ctx context.Context, cfg *weir.Config) error
	// Build declares the job's graph on env from the flag values and
	// env.Config(), and returns; app then executes the graph (locally) or
	// hands it to the cluster. It runs in every role and must be a pure
	// function of the flags and the configuration.
	Build func(env *weir.Env) error
	// Execute, if set, replaces env.Execute in a local run, to add work
	// around it. app serves the REST API (--rest-address) and prints the
	// progress line while it runs and the run's summary after it.
	Execute func(ctx context.Context, env *weir.Env, jobName string) error
	// Summary, if set, returns lines (each ending in a newline) that a
	// local run prints after app's own summary, whether the job succeeded
	// or not: e.g. which injected failures fired.
	Summary func() string
	// Finish, if set, runs where the job was launched once it FINISHED
	// (a local run, or an attached client): to report or verify its
	// committed output, with what the run's Outcome says.
	Finish func(ctx context.Context, out Outcome) error
}

// Outcome is what Run.Finish learns of a run whose job FINISHED, the same
// in a local run and in an attached client.
type Outcome struct {
	// Config is the configuration the job ran with.
	Config *weir.Config
	// Weak is a WEAKLY_CONSISTENT job's failover accounting to its end:
	// in a local run the job's own, on a cluster the JobManager's sums of
	// what its TaskManagers reported. It is nil in the other modes, and
	// on a cluster whose JobManager reported none.
	Weak *WeakFigures
}

// Flag annotations that steer how a client turns the command line into
// the arguments every role parses (see normalizeArgs).
const (
	annotationPath       = "weir_app_path"
	annotationSeed       = "weir_app_seed"
	annotationClientOnly = "weir_app_client_only"
	annotationLocalOnly  = "weir_app_local_only"
)

// MarkPath marks flag name as a local path (or glob): a client submits it
// made absolute, so that processes with another working directory find
// the same file. URLs (s3://, kafka://) are left alone.
func MarkPath(fs *pflag.FlagSet, name string) {
	mustAnnotate(fs, name, annotationPath, "true")
}

// MarkSeed marks flag name as a random seed where 0 means "choose one": a
// client submits a chosen non-zero seed, so that every role builds the
// same job.
func MarkSeed(fs *pflag.FlagSet, name string) {
	mustAnnotate(fs, name, annotationSeed, "true")
}

// MarkClientOnly marks flag name as meaningful only where the job is
// launched (--verify, --quiet) or already folded into the configuration
// by Run.Configure (--parallelism): a client does not submit it.
func MarkClientOnly(fs *pflag.FlagSet, name string) {
	mustAnnotate(fs, name, annotationClientOnly, "true")
}

// MarkLocalOnly marks flag name as meaningful only in a local run; run
// --jobmanager refuses it with why, which should name what to do instead.
func MarkLocalOnly(fs *pflag.FlagSet, name, why string) {
	mustAnnotate(fs, name, annotationLocalOnly, why)
}

func mustAnnotate(fs *pflag.FlagSet, name, key, value string) {
	if err := fs.SetAnnotation(name, key, []string{value}); err != nil {
		panic("app: annotate flag: " + err.Error()) // a programming error: the flag is not defined
	}
}

// annotation returns the first value of a flag's annotation, or "".
func annotation(f *pflag.Flag, key string) string {
	if v := f.Annotations[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

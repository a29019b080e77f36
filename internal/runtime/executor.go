package runtime

import "context"

// Executor runs a job's graph in place of Execute's local run. The
// application-mode roles use it: a JobManager or TaskManager builds a job
// with the user's ordinary builder code (which ends in Env.Execute) and
// takes the graph and configuration instead of running them locally.
type Executor func(ctx context.Context, g *Graph, cfg JobConfig) error

type executorKey struct{}

// WithExecutor returns a context under which Execute hands the job to f
// (its configuration validated, defaults filled) instead of running it.
// A context carries the choice, not a global, so one process may run local
// jobs and capture others at the same time.
func WithExecutor(ctx context.Context, f Executor) context.Context {
	return context.WithValue(ctx, executorKey{}, f)
}

// executorFrom returns the Executor ctx carries, or nil.
func executorFrom(ctx context.Context) Executor {
	f, _ := ctx.Value(executorKey{}).(Executor)
	return f
}

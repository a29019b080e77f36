package testutil

import (
	"context"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

// KeepFinishedCheckpoints makes env's job keep its checkpoints when it
// FINISHED, for tests that restore, rescale or inspect a finished run's
// final checkpoint. A job's own runs discard them (docs/guarantees.md,
// "Running a job again"), as Flink does.
func KeepFinishedCheckpoints(env *weir.Env) {
	hooks.Plan(env).Executor = func(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig) error {
		return runtime.Execute(ctx, g, jc)
	}
}

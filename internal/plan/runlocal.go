package plan

import (
	"context"
	"log/slog"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
)

// RunLocal runs a resolved job in this process with the rule for a job
// that FINISHED (docs/guarantees.md, "Running a job again"), the same as
// app's local runs and a cluster's: a run from scratch of a job whose
// folder records a run that FINISHED is refused (unless jc.Rerun) before
// anything starts; it logs where the run starts (from scratch, --from, or
// resuming an unfinished earlier run's checkpoint), and once the job
// FINISHED it records the run and discards the job's checkpoints, so that
// nothing resumes a final checkpoint whose sources are at their end.
func RunLocal(ctx context.Context, g *dataflow.Graph, jc runtime.JobConfig, log *slog.Logger) error {
	note, err := runtime.CheckFinished(jc)
	if err != nil {
		return err
	}
	if note != "" {
		log.Info(note)
	}
	if line, err := runtime.StartLine(jc); err != nil {
		log.Warn("look for checkpoints to resume", "job", jc.JobName, "error", err)
	} else {
		log.Info(line)
	}
	if err := runtime.Execute(ctx, g, jc); err != nil {
		return err
	}
	if err := runtime.RecordFinished(jc); err != nil {
		// The output is committed; what is left only makes the next run
		// resume the final checkpoint, which commits nothing new.
		log.Warn("job finished, but it was not recorded as finished or its checkpoints were not discarded", "job", jc.JobName, "error", err)
	}
	return nil
}

package plan

import (
	"context"
	"log/slog"

	"github.com/weirstream/weir/internal/runtime"
)

// RunLocal runs a resolved job in this process with the rule for a job
// that FINISHED (docs/guarantees.md, "Running a job again"), the same as
// app's local runs and a cluster's: it logs where the run starts (from
// scratch, --from, or resuming an unfinished earlier run's checkpoint),
// and once the job FINISHED it discards the job's checkpoints, so that
// running it again starts from scratch instead of resuming a final
// checkpoint whose sources are at their end.
func RunLocal(ctx context.Context, g *runtime.Graph, jc runtime.JobConfig, log *slog.Logger) error {
	if line, err := runtime.StartLine(jc); err != nil {
		log.Warn("look for checkpoints to resume", "job", jc.JobName, "error", err)
	} else {
		log.Info(line)
	}
	if err := runtime.Execute(ctx, g, jc); err != nil {
		return err
	}
	if err := runtime.DiscardCheckpoints(jc); err != nil {
		// The output is committed; what is left only makes the next run
		// resume the final checkpoint, which commits nothing new.
		log.Warn("job finished, but its checkpoints were not discarded: remove the folder before running the job again", "job", jc.JobName, "error", err)
	}
	return nil
}

package runtime

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
)

// RescaleStart is an in-place rescale the next run of a job carries out:
// when it was asked for, the checkpoint it redeploys from and the
// parallelism of every vertex by name. The run reports the pause once its
// tasks run (reportRescaled).
type RescaleStart struct {
	At          time.Time
	Checkpoint  checkpoint.ID
	Parallelism map[string]int
}

// rescaleStart returns the rescale this attempt ended for (rescaleDone).
func (jm *JobMaster) rescaleStart() *RescaleStart {
	r := jm.rescaled
	return &RescaleStart{At: r.at, Checkpoint: r.ckpt, Parallelism: r.par}
}

// reportRescaled reports the pause of the rescale this run carries out,
// once: from the request until every task of the new deployment runs
// (restored its state). Called after each step until then.
func (jm *JobMaster) reportRescaled() {
	r := jm.cfg.Rescaling
	if r == nil || jm.rescaleReported {
		return
	}
	for _, v := range jm.jg.Vertices {
		for s := range v.Parallelism {
			if _, st := jm.m.Exec(checkpoint.TaskID{Vertex: v.ID, Subtask: s}); st != jobmaster.ExecRunning {
				return
			}
		}
	}
	jm.rescaleReported = true
	pause := jm.cfg.Now().Sub(r.At)
	jm.log.Info("rescaled in place: running at the new parallelism", "pause", pause.Round(time.Millisecond), "checkpoint", r.Checkpoint, "parallelism", r.Parallelism)
	jm.status.Rescaled(jobstatus.RescaleRecord{At: r.At, Checkpoint: r.Checkpoint, Parallelism: r.Parallelism, Pause: pause})
}

package cluster

import (
	"context"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/runtime"
)

// discardFinished records a job that FINISHED in its folder (the
// finished-run marker) and removes its checkpoints, once its end is
// recorded: a resubmission under its name is then refused for the
// finished run (runtime.CheckFinished) unless it asks to run again, as a
// local run started again is. (Recording first: a crash in between
// leaves checkpoints a resubmission is refused for, never a record that
// makes the next JobManager run the job again without them.)
func (m *jobManager) discardFinished(j *managedJob) {
	if j.rec.State != jobstatus.StateFinished {
		return
	}
	jc := j.jc
	jc.JobName = j.rec.Spec.Name
	if m.lead != nil {
		// The pointers go first: a registered checkpoint must never
		// point to removed files.
		ctx, cancel := context.WithTimeout(context.Background(), haStoreTimeout)
		err := m.lead.DropCheckpoints(ctx, jc.JobName)
		cancel()
		if err != nil {
			m.log.Warn("unregister the finished job's checkpoints; its files are kept", "job", jc.JobName, "error", err)
			return
		}
	}
	if err := runtime.RecordFinished(jc); err != nil {
		m.log.Warn("record the finished job in its folder and discard its checkpoints", "job", jc.JobName, "error", err)
	}
}

// logStart says where a submitted job starts, as a local run does.
func (m *jobManager) logStart(name string, jc runtime.JobConfig) {
	jc.JobName = name
	line, err := runtime.StartLine(jc)
	if err != nil {
		m.log.Warn("look for checkpoints to resume", "job", name, "error", err)
		return
	}
	m.log.Info(line, "job", name)
}

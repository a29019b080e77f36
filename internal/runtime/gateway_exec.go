package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"

	"github.com/weirstream/weir/internal/deployment"
)

// execGateway is a Task's JobGateway: it adds the job and the attempt to
// what the task reports.
type execGateway struct {
	jm      deployment.JobMasterGateway
	job     string
	attempt int
}

func (g execGateway) exec(t checkpoint.TaskID) deployment.ExecutionID {
	return deployment.ExecutionID{Task: t, Attempt: g.attempt}
}

func (g execGateway) Acknowledge(task checkpoint.TaskID, id checkpoint.ID, st checkpoint.TaskState) {
	g.jm.Acknowledge(g.job, g.exec(task), id, st)
}

func (g execGateway) Decline(task checkpoint.TaskID, id checkpoint.ID, reason string, storage bool) {
	g.jm.Decline(g.job, g.exec(task), id, reason, storage)
}

func (g execGateway) EndOfData(task checkpoint.TaskID) {
	g.jm.EndOfData(g.job, g.exec(task))
}

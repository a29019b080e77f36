package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
)

// Local mode's gateways. The TaskManagerGateway is the TaskExecutor itself
// (its methods are direct calls that only queue work); the
// JobMasterGateway is localJobMaster, which puts each message into the
// JobMaster's inbox. Cluster mode puts the control-plane stream behind the
// same two interfaces.

var _ deployment.TaskManagerGateway = (*TaskExecutor)(nil)

// jmEvent is a message to the JobMaster loop: an event for its Machine,
// or one the loop must translate first (a lost TaskManager's gateway, a
// request whose target was checked).
type jmEvent struct {
	ev     jobmaster.Event
	lost   deployment.TaskManagerGateway
	reason string
	req    *triggerRequest
}

// inbox is the JobMaster's queue of events: from tasks through the
// JobMasterGateway, and from its storage worker. The JobMaster can call
// the TaskExecutor (which may report at once) from its loop without a
// deadlock, because putting never blocks.
type inbox = queue[jmEvent]

func newInbox() *inbox { return newQueue[jmEvent]() }

// localJobMaster is the JobMasterGateway of local mode: messages for its
// job go into the JobMaster's inbox; messages for another job (there is
// none in local mode) are dropped.
type localJobMaster struct {
	job string
	in  *inbox
}

func (g *localJobMaster) put(job string, e jobmaster.Event) {
	if job == g.job {
		g.in.put(jmEvent{ev: e})
	}
}

func (g *localJobMaster) JobPrepared(job string, err error) {
	g.put(job, jobmaster.Prepared{Err: err})
}

func (g *localJobMaster) TaskStateChanged(job string, exec deployment.ExecutionID, st deployment.ExecState, err error) {
	g.put(job, jobmaster.StateChanged{Exec: exec, State: st, Err: err})
}

func (g *localJobMaster) Acknowledge(job string, exec deployment.ExecutionID, id checkpoint.ID, st checkpoint.TaskState) {
	g.put(job, jobmaster.Ack{Exec: exec, ID: id, State: st})
}

func (g *localJobMaster) Decline(job string, exec deployment.ExecutionID, id checkpoint.ID, reason string, storage bool) {
	g.put(job, jobmaster.Decline{Exec: exec, ID: id, Reason: reason, Storage: storage})
}

func (g *localJobMaster) EndOfData(job string, exec deployment.ExecutionID) {
	g.put(job, jobmaster.EndOfData{Exec: exec})
}

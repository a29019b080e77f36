package cluster

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/deployment"
)

// tmGateway is a JobMaster's TaskManagerGateway over a TaskManager's
// session: each call queues one message on the session's stream, so they
// reach the TaskManager in call order. A send to a session that ended is
// dropped: the session's loss reaches the JobMaster as TaskManagerLost,
// which fails whatever ran there.
type tmGateway struct {
	tm *TaskManager
}

var _ deployment.TaskManagerGateway = tmGateway{}

func (g tmGateway) send(m *pb.JobManagerMessage) { _ = g.tm.Send(m) }

func (g tmGateway) ID() deployment.ResourceID { return deployment.ResourceID(g.tm.ID) }

func (g tmGateway) PrepareJob(spec deployment.JobSpec, description string) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_PrepareJob{PrepareJob: &pb.PrepareJob{Spec: specToPB(spec), Description: description}}})
}

func (g tmGateway) ReleaseJob(job string) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_ReleaseJob{ReleaseJob: &pb.ReleaseJob{Job: job}}})
}

func (g tmGateway) Deploy(d deployment.Deployment) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Deploy{Deploy: deployToPB(d)}})
}

func (g tmGateway) Cancel(job string, execs []deployment.ExecutionID) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Cancel{Cancel: &pb.CancelTasks{Job: job, Execs: execsToPB(execs)}}})
}

func (g tmGateway) Trigger(job string, exec deployment.ExecutionID, b checkpoint.Barrier) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Trigger{Trigger: &pb.Trigger{
		Job: job, Exec: execToPB(exec), CheckpointId: int64(b.ID), TimestampUnixNanos: b.Timestamp.UnixNano(), Kind: kindToPB(b.Kind),
	}}})
}

func (g tmGateway) NotifyComplete(job string, id checkpoint.ID, kind checkpoint.Kind) {
	k := kindToPB(kind)
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_NotifyComplete{NotifyComplete: &pb.NotifyComplete{Job: job, CheckpointId: int64(id), Kind: &k}}})
}

func (g tmGateway) NotifyAborted(job string, id checkpoint.ID) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_NotifyAborted{NotifyAborted: &pb.NotifyAborted{Job: job, CheckpointId: int64(id)}}})
}

func (g tmGateway) StopSources(job string, execs []deployment.ExecutionID) {
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_StopSources{StopSources: &pb.StopSources{Job: job, Execs: execsToPB(execs)}}})
}

func (g tmGateway) WeakPeers(job string, u deployment.WeakPeersUpdate) {
	m := &pb.WeakPeers{Job: job}
	for _, c := range u.Moved {
		m.Moved = append(m.Moved, channelToPB(c))
	}
	for _, t := range u.Finished {
		m.Finished = append(m.Finished, execToPB(deployment.ExecutionID{Task: t}))
	}
	g.send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_WeakPeers{WeakPeers: m}})
}

// deliverToJob hands one gateway message from a TaskManager to the
// JobMaster of its job, which drops reports of attempts it does not run.
// A malformed acknowledgement is logged and dropped: the checkpoint times
// out rather than completing with a state the JobManager cannot read.
func deliverToJob(jm deployment.JobMasterGateway, m *pb.TaskManagerMessage, logBad func(msg string, err error)) {
	switch x := m.GetMsg().(type) {
	case *pb.TaskManagerMessage_JobPrepared:
		p := x.JobPrepared
		jm.JobPrepared(p.GetJob(), remoteError(p.GetError(), p.GetUnrecoverable()))
	case *pb.TaskManagerMessage_TaskStateChanged:
		c := x.TaskStateChanged
		st, ok := stateFromPB(c.GetState())
		if !ok {
			return
		}
		var err error
		if st == deployment.ExecFailed {
			err = remoteError(c.GetError(), c.GetUnrecoverable())
			if err == nil {
				err = remoteError("failed without an error", false)
			}
			if c.GetTransactionLost() {
				err = &transactionLostError{err}
			}
		}
		jm.TaskStateChanged(c.GetJob(), execFromPB(c.GetExec()), st, err)
	case *pb.TaskManagerMessage_Acknowledge:
		a := x.Acknowledge
		st, err := taskStateFromPB(a.GetTaskState())
		if err != nil {
			logBad("malformed checkpoint acknowledgement dropped", err)
			return
		}
		jm.Acknowledge(a.GetJob(), execFromPB(a.GetExec()), checkpoint.ID(a.GetCheckpointId()), st)
	case *pb.TaskManagerMessage_Decline:
		d := x.Decline
		jm.Decline(d.GetJob(), execFromPB(d.GetExec()), checkpoint.ID(d.GetCheckpointId()), d.GetReason(), d.GetStorage())
	case *pb.TaskManagerMessage_EndOfData:
		e := x.EndOfData
		jm.EndOfData(e.GetJob(), execFromPB(e.GetExec()))
	}
}

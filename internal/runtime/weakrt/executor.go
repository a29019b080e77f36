package weakrt

import (
	"context"
	"log/slog"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/network/wire"
	"github.com/weirstream/weir/internal/runtime"
)

// Mode is WEAKLY_CONSISTENT's runtime.RecoveryMode: set it as
// runtime.JobConfig.Recovery with Weak (internal/plan does).
type Mode struct{}

var _ runtime.RecoveryMode = Mode{}

// NewJob returns the job's weakRegistry: the TaskExecutor's part of the
// mode.
func (Mode) NewJob(job runtime.JobInfo) runtime.JobRecovery {
	cfg := &job.Prepared.Config
	r := newWeakRegistry(cfg.WeakLogMaxRecords, job.Weak, cfg.Now)
	r.job, r.log = job, job.Logger
	if r.log == nil {
		r.log = slog.Default()
	}
	return r
}

// InitialRestore gathers each task's newest snapshot (restore.go).
func (Mode) InitialRestore(ctx context.Context, jm runtime.JobMasterView) (runtime.TaskRestores, error) {
	return initialRestore(ctx, jm)
}

// The TaskExecutor's part of WEAKLY_CONSISTENT mode: the job's
// weakRegistry is its runtime.JobRecovery, and the requests and updates
// only this mode has (a remote consumer asking for a channel's log,
// producers that moved, the job's failover totals) arrive here through
// the optional parts runtime.LogServer, PeerFollower and TotalsReporter.
var (
	_ runtime.JobRecovery    = (*weakRegistry)(nil)
	_ runtime.LogServer      = (*weakRegistry)(nil)
	_ runtime.PeerFollower   = (*weakRegistry)(nil)
	_ runtime.TotalsReporter = (*weakRegistry)(nil)
)

// Ended disconnects an ended consuming execution from its producers' logs
// and notes a failure's time (ended).
func (r *weakRegistry) Ended(exec deployment.ExecutionID, failed bool) { r.ended(exec, failed) }

// Hears: a notification about checkpoint id goes only to the task whose
// own snapshot id is (another task's snapshot completing says nothing
// about its own, whose transactions must not commit on it).
func (r *weakRegistry) Hears(id checkpoint.ID, task checkpoint.TaskID) bool {
	owner, ok := r.ownerOf(id)
	return ok && owner == task
}

// AddStats adds the task's failover figures to its report.
func (r *weakRegistry) AddStats(t checkpoint.TaskID, st *jobstatus.TaskStats) {
	st.Weak = r.taskStats(t)
}

// FollowPeers applies a WeakPeers update (peers).
func (r *weakRegistry) FollowPeers(u deployment.WeakPeersUpdate) int { return r.peers(u) }

// Totals returns the failover figures counted here.
func (r *weakRegistry) Totals() *jobstatus.WeakStats { return r.stats }

// NewExecution returns the mode's part of an execution being deployed.
func (r *weakRegistry) NewExecution(x runtime.ExecInfo) runtime.ExecRecovery {
	e := &execRecovery{reg: r, x: x}
	if x.Restore != nil {
		e.pos = weakFor(x.Restore.Metadata(), x.Vertex.Chain[0].UID, x.Exec.Task.Subtask)
	}
	return e
}

// execRecovery is one execution's part of the mode: every output channel
// is its producer subtask's log (outs), every remote input a weakRemoteIn
// that follows its producer, and its task's recovery a weakTask.
type execRecovery struct {
	reg *weakRegistry
	x   runtime.ExecInfo
	// pos are the positions the execution restores, nil for none.
	pos *checkpoint.WeakPositions
	// remoteIns are the remote inputs by gate channel (nil: a local
	// one): a completed snapshot releases what their producers' logs
	// hold for it, and a producer that moves to another TaskManager is
	// followed (relocate.go).
	remoteIns []*weakRemoteIn
	// outs are the execution's output logs, per edge, per consumer.
	outs [][]*weakSender
	// lost is the input records the logs no longer held
	// (ConnectInputs).
	lost uint64
}

// Output returns the log of the execution's channel to consumer subtask j
// of output edge k: the job's own for that channel, kept by the registry
// across restarts of either end. The consumer connects itself, whenever
// it is deployed: in this TaskManager to its gate channel
// (weakRegistry.connectInputs), from another through its partition
// request, which makes an OutChannel for its attempt (ServeLog); either
// replays the log from the position the consumer's snapshot read.
func (e *execRecovery) Output(k, j int, consumer deployment.ChannelDesc, codec dataflow.ChannelCodec) (network.Sender, error) {
	s, _ := e.reg.sender(weakKey{producer: e.x.Exec.Task, edge: k, consumer: j}, consumer.Peer.Task)
	s.setCodec(codec)
	for len(e.outs) <= k {
		e.outs = append(e.outs, nil)
	}
	for len(e.outs[k]) <= j {
		e.outs[k] = append(e.outs[k], nil)
	}
	e.outs[k][j] = s
	return s, nil
}

// OpenRemoteInput: the request names the consumer's attempt, not the
// producer's (whose attempts come and go behind the log), and asks the
// producer's log for what follows the position the restored snapshot
// read (none: from the start); the input follows its producer to another
// TaskManager (weakRemoteIn).
func (e *execRecovery) OpenRemoteInput(ctx context.Context, in deployment.ChannelDesc, cfg remote.InputConfig) error {
	if e.remoteIns == nil {
		e.remoteIns = make([]*weakRemoteIn, len(e.x.Inputs))
	}
	ch := cfg.Channel
	cfg.Weak, cfg.Attempt, cfg.OnFailure = true, e.x.Exec.Attempt, nil
	if e.pos != nil && ch < len(e.pos.Inputs) {
		cfg.From = wire.LogPos{Buffers: e.pos.Inputs[ch].Buffers, Records: e.pos.Inputs[ch].Records}
	}
	w := &weakRemoteIn{ctx: e.x.Life, net: e.x.Net, self: e.x.Self, cfg: cfg, fail: e.x.Fail}
	if err := w.open(ctx, in); err != nil {
		return err
	}
	e.remoteIns[ch] = w
	return nil
}

// ConnectInputs connects the gate's channels from producers in this
// TaskManager to their logs (weakRegistry.connectInputs).
func (e *execRecovery) ConnectInputs(g *network.Gate) error {
	keys := make([]weakKey, len(e.x.Inputs))
	for ch, in := range e.x.Inputs {
		keys[ch] = weakKey{producer: in.Peer.Task, edge: e.x.InputEdges[ch], consumer: e.x.Exec.Task.Subtask}
	}
	lost, err := e.reg.connectInputs(e.x.Life, e.x.Exec, keys, g, e.remoteIns, e.pos, e.x.Fail)
	if err != nil {
		return err
	}
	e.lost = lost
	if lost > 0 {
		e.reg.log.Warn("restarted task lost input: its producers' in-flight logs no longer held it (execution.checkpointing.weak.in-flight-log.max-records)", "exec", e.x.Exec.String(), "lost records", lost)
	}
	return nil
}

// Setup counts the deployment (weakRegistry.deploy) and prepares the
// task's weakTask.
func (e *execRecovery) Setup(ctx context.Context, t runtime.TaskView) (runtime.Recovery, error) {
	cfg := &e.reg.job.Prepared.Config
	e.reg.deploy(e.x.Exec.Task, e.x.Exec.Attempt)
	logs := func() (map[[2]int]*restoredLog, error) {
		return readRestoredLogs(ctx, e.x.Restore, e.x.Vertex, e.pos, cfg.BatchSize)
	}
	w, err := setupWeak(t, e.reg, e.x.Exec, e.outs, e.pos, e.lost > 0, cfg.WeakLogSnapshot, logs)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// HasRemoteInputs reports whether a gate channel is fed from another
// TaskManager.
func (e *execRecovery) HasRemoteInputs() bool {
	for _, w := range e.remoteIns {
		if w != nil {
			return true
		}
	}
	return false
}

// Release counts the bytes the output logs sent to remote consumers and
// closes the remote inputs.
func (e *execRecovery) Release(st *jobstatus.Recorder) {
	if st != nil {
		for _, ws := range e.outs {
			for _, s := range ws {
				st.RemoteBytesSent.Add(int64(s.takeRemoteBytes()))
			}
		}
	}
	for _, w := range e.remoteIns {
		if w != nil {
			w.close()
		}
	}
	e.remoteIns = nil
}

// weakFor returns the positions a subtask of the task headed by headUID
// restores from md, nil if none.
func weakFor(md *checkpoint.Metadata, headUID string, subtask int) *checkpoint.WeakPositions {
	if md == nil {
		return nil
	}
	op := md.Operator(headUID)
	if op == nil {
		return nil
	}
	for _, s := range op.Subtasks {
		if s.Subtask == subtask {
			return s.State.Weak
		}
	}
	return nil
}

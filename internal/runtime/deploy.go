package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
)

// build creates the tasks of a deployment on this TaskExecutor: first a
// gate per consuming task, registered for its producers, then each task
// with its operators, restored state and writers. It returns the index of
// the execution it failed for.
func (te *TaskExecutor) build(ctx context.Context, j *teJob, d Deployment, execs []*execution) ([]*Task, int, error) {
	cfg := j.prep.Config
	jg := j.prep.Graph
	rp, err := j.restorePoint(ctx, d.Restore)
	if err != nil {
		return nil, 0, err
	}
	var gopts []network.GateOption
	if cfg.Unaligned && cfg.AlignedTimeout > 0 {
		// Alternating mode: an announcement overtakes the data ahead of
		// each barrier, so the alignment timer starts even when the
		// barrier is stuck behind backlog.
		gopts = append(gopts, network.WithAnnouncements())
	}
	gates := make([]*network.Gate, len(d.Tasks))
	links := make([]*taskLinks, len(d.Tasks))
	for i := range d.Tasks {
		links[i] = &taskLinks{self: te.cfg.ID, job: d.Job, parts: j.parts, net: te.cfg.Network, credits: cfg.CreditsPerChannel, announce: cfg.Unaligned && cfg.AlignedTimeout > 0}
		execs[i].links = links[i]
	}
	// Every TaskManager the channels name gets its connection now, for
	// outputs as for inputs: of two TaskManagers the smaller id dials, so
	// it must learn of the other even when it only produces for it.
	if peers := d.peers(te.cfg.ID); len(peers) > 0 {
		if te.cfg.Network == nil {
			return nil, 0, links[0].noNetwork(d.Tasks[0].Exec, "peer", peers[0])
		}
		for _, p := range peers {
			if _, err := te.cfg.Network.Conn(ctx, string(p.TM), p.DataAddress); err != nil {
				return nil, 0, fmt.Errorf("deploy on %s: %w", te.cfg.ID, err)
			}
		}
	}
	for i, td := range d.Tasks {
		if td.Exec.Task.Vertex < 0 || td.Exec.Task.Vertex >= len(jg.Vertices) {
			return nil, i, fmt.Errorf("deploy %s: job %s has no vertex %d", td.Exec, d.Job, td.Exec.Task.Vertex)
		}
		v := jg.Vertices[td.Exec.Task.Vertex]
		if v.IsSource() {
			continue
		}
		if _, total := gateOffsets(v); total != len(td.Inputs) {
			return nil, i, fmt.Errorf("deploy %s: %d input channels, vertex %q has %d", td.Exec, len(td.Inputs), v.Name(), total)
		}
		gates[i] = network.NewGate(len(td.Inputs), cfg.CreditsPerChannel, gopts...)
		j.parts.register(td.Exec, gates[i], td.Inputs)
		if err := links[i].openInputs(ctx, td.Exec, v, td.Inputs, gates[i], execs[i].failAsync); err != nil {
			return nil, i, err
		}
	}
	sw := &storeWriters{fs: j.prep.Store}
	gw := func(attempt int) JobGateway { return execGateway{jm: te.cfg.JobMaster, job: d.Job, attempt: attempt} }
	tasks := make([]*Task, 0, len(d.Tasks))
	for i, td := range d.Tasks {
		t, err := newTask(ctx, j.prep, td, execs[i].mail, rp, gw(td.Exec.Attempt), gates[i], links[i], sw)
		if err != nil {
			return nil, i, err
		}
		tasks = append(tasks, t)
	}
	return tasks, 0, nil
}

// newTask builds the task of one execution: operators and their
// contexts, writers to its consumers' channels, and for a consuming task
// its gate and barrier handler.
func newTask(ctx context.Context, prep *PreparedJob, td TaskDeployment, mb *mailbox, rp *restorePoint, gw JobGateway, gate *network.Gate, links *taskLinks, sw *storeWriters) (*Task, error) {
	cfg := prep.Config
	id := td.Exec.Task
	v := prep.Graph.Vertices[id.Vertex]
	s, attempt := id.Subtask, td.Exec.Attempt
	t := &Task{
		ID:      id,
		Name:    v.Name(),
		mail:    mb,
		gw:      gw,
		store:   sw,
		faults:  cfg.Faults,
		logger:  cfg.Logger.With("task", v.Name(), "subtask", s),
		now:     cfg.Now,
		metrics: &TaskMetrics{job: nil},

		bufferTimeout: cfg.BufferTimeout,
		lastFlush:     cfg.Now(),

		debt:             network.NewDebt(),
		unaligned:        cfg.Unaligned,
		priorityTriggers: cfg.Unaligned && cfg.AlignedTimeout == 0,
		maxChannelState:  cfg.MaxChannelStateBytes,
	}
	t.metrics.job = cfg.Status // source records (sources only), restore time
	// Operators and their contexts.
	for _, n := range v.Chain {
		kgs := keygroup.RangeFor(n.MaxParallelism, n.Parallelism, s)
		restored, err := rp.forOperator(ctx, n.UID, s, n.Parallelism, kgs)
		if err != nil {
			return nil, err
		}
		t.ops = append(t.ops, n.NewOperator(s))
		t.ocs = append(t.ocs, &OperatorContext{
			JobName: cfg.JobName, Task: id, UID: n.UID, Name: n.Name, Subtask: s, Parallelism: n.Parallelism,
			MaxParallelism: n.MaxParallelism, KeyGroups: kgs, Attempt: attempt, Restored: restored,
			BatchSize: cfg.BatchSize, Faults: cfg.Faults, Logger: t.logger.With("operator", n.Name), Now: cfg.Now,
			StateBackend: cfg.StateBackend,
		})
	}
	// Outgoing edges of the chain's last node.
	last := v.Chain[len(v.Chain)-1]
	var outs []any
	if len(td.Outputs) != len(v.Outputs) {
		return nil, fmt.Errorf("deploy %s: %d output edges, vertex %q has %d", td.Exec, len(td.Outputs), v.Name(), len(v.Outputs))
	}
	var sent []network.Sender
	for k, o := range v.Outputs {
		if len(td.Outputs[k]) != o.To.Parallelism {
			return nil, fmt.Errorf("deploy %s: output to %q has %d consumers, the vertex %d", td.Exec, o.To.Name(), len(td.Outputs[k]), o.To.Parallelism)
		}
		offsets, _ := gateOffsets(o.To)
		channels := make([]network.Sender, o.To.Parallelism)
		var codec ChannelCodec // the edge's encoder, made once for its remote channels
		encoder := func() (ChannelCodec, error) {
			if codec != nil {
				return codec, nil
			}
			c, err := last.NewChannelCodec(cfg.BatchSize)
			if err != nil {
				return nil, edgeCodecError(last, o.To, err)
			}
			codec = c
			return c, nil
		}
		for j := range channels {
			c, err := links.sender(td.Exec, k, j, offsets[o.InputIndex]+s, td.Outputs[k][j], encoder)
			if err != nil {
				return nil, err
			}
			channels[j] = c
			sent = append(sent, c)
		}
		w, err := last.NewWriter(channels, o.Edge, last.NewPool(cfg.BatchSize), s, last.MaxParallelism, &t.metrics.RecordsOut, network.WithOverdraft(cfg.MaxOverdraft, t.debt))
		if err != nil {
			return nil, fmt.Errorf("operator %q: output to %q: %w", last.Name, o.To.Name(), err)
		}
		t.writers = append(t.writers, w)
		outs = append(outs, w)
	}
	if len(sent) > 0 {
		t.metrics.backpressure = func() uint64 {
			var waits uint64
			for _, c := range sent {
				waits += c.BackpressureWaits()
			}
			return waits
		}
		t.metrics.credits = func() int {
			n := 0
			for _, c := range sent {
				if r, ok := c.(network.CreditReporter); ok {
					n += r.AvailableCredits()
				}
			}
			return n
		}
	}
	// Chain links, from the tail.
	for i := len(v.Chain) - 1; i >= 0; i-- {
		n := v.Chain[i]
		if i < len(v.Chain)-1 {
			outs = []any{t.ops[i+1]}
		}
		setter, emits := t.ops[i].(OutputSetter)
		if len(outs) == 0 {
			continue
		}
		if !emits {
			return nil, fmt.Errorf("operator %q produces no output but has consumers", n.Name)
		}
		out, err := n.Combine(outs)
		if err != nil {
			return nil, fmt.Errorf("operator %q: connect output: %w", n.Name, err)
		}
		if err := setter.SetOutput(out); err != nil {
			return nil, fmt.Errorf("operator %q: connect output: %w", n.Name, err)
		}
	}
	if v.IsSource() {
		src, ok := t.ops[0].(SourceOperator)
		if !ok {
			return nil, fmt.Errorf("operator %q has no inputs and is not a source", v.Chain[0].Name)
		}
		t.source = src
		return t, nil
	}
	in, err := v.Chain[0].InputOf(t.ops[0])
	if err != nil {
		return nil, fmt.Errorf("operator %q: connect input: %w", v.Chain[0].Name, err)
	}
	t.input = in
	t.gate = gate
	n := len(td.Inputs)
	t.eod = make([]bool, n)
	t.lastSeq = make([]uint64, n)
	switch {
	case cfg.AtLeastOnce:
		t.handler = barrier.NewAtLeastOnce(n)
	case cfg.Unaligned:
		t.handler = barrier.NewUnaligned(n, cfg.AlignedTimeout)
	default:
		t.handler = barrier.NewAligned(n)
	}
	// The channel state of an unaligned checkpoint is replayed whatever
	// the job's mode now: those in-flight records are part of its state.
	h := rp.channelsFor(v.Chain[0].UID, s)
	t.links = links
	if len(links.ins) > 0 {
		// Remote channels deliver encoded batches: the task decodes them.
		chans, err := channelInfos(v, cfg.BatchSize, whyRemote)
		if err != nil {
			return nil, err
		}
		t.chans = chans
	} else if cfg.Unaligned || h != nil {
		chans, err := channelInfos(v, cfg.BatchSize, whyUnaligned)
		if err != nil {
			return nil, err
		}
		t.chans = chans
	} else if chans, err := channelInfos(v, cfg.BatchSize, whyUnaligned); err == nil {
		// Aligned: the codecs only measure what alignment holds back
		// (task_stats.go); a record type without one measures nothing.
		t.chans = chans
	}
	if h != nil {
		t.replay = h
		t.openState = rp.fs.OpenFile
		if cfg.Status != nil {
			cfg.Status.RestoredChannelStateBytes.Add(h.File.Size)
			offsets, _ := gateOffsets(v)
			for _, c := range h.Channels {
				if c.Input >= len(offsets) {
					continue // checkChannelState refused such a checkpoint
				}
				if ch := offsets[c.Input] + c.Producer; ch < len(td.Inputs) && td.Inputs[ch].TM != links.self {
					for _, seg := range c.Segments {
						cfg.Status.RestoredRemoteChannelStateBytes.Add(seg.Length)
					}
				}
			}
		}
	}
	return t, nil
}

// Why channelInfos needs the codecs, for its error: the start of the
// sentence and the fix.
var (
	whyUnaligned = [2]string{"unaligned checkpoints store in-flight records of", "disable execution.checkpointing.unaligned.enabled"}
	whyRemote    = [2]string{"remote channels carry the encoded records of", "run the edge's producers and consumers on one TaskManager"}
)

// channelInfos describes every gate channel of a subtask of v for channel
// state and remote input: its input, producer and the producer's codec
// (one per input). A record type without a codec fails the job for good:
// no restart can change it.
func channelInfos(v *Vertex, batchSize int, why [2]string) ([]channelInfo, error) {
	var chans []channelInfo
	for i, in := range v.Inputs {
		last := in.From.Chain[len(in.From.Chain)-1]
		c, err := last.NewChannelCodec(batchSize)
		if err != nil {
			return nil, Unrecoverable(fmt.Errorf("%s edge %q -> %q (type %s): %w; make the type encodable or %s", why[0], last.Name, v.Name(), last.OutType, err, why[1]))
		}
		for p := 0; p < in.From.Parallelism; p++ {
			chans = append(chans, channelInfo{input: i, producerUID: last.UID, producerParallelism: in.From.Parallelism, producer: p, codec: wireCodec{c}})
		}
	}
	return chans, nil
}

// edgeCodecError is the unrecoverable error of an edge whose records have
// no encoding.
func edgeCodecError(last *Node, to *Vertex, err error) error {
	return Unrecoverable(fmt.Errorf("records of edge %q -> %q (type %s) cannot cross TaskManagers: %w; make the type encodable or implement encoding.BinaryMarshaler and BinaryUnmarshaler (docs/api.md, \"Records between processes\")", last.Name, to.Name(), last.OutType, err))
}

// checkEdgeCodecs makes the encoder of every edge between vertices, so a
// job whose records cannot cross TaskManagers fails at submission, before
// anything runs, naming the edge.
func checkEdgeCodecs(jg *JobGraph, batchSize int) error {
	for _, v := range jg.Vertices {
		last := v.Chain[len(v.Chain)-1]
		for _, o := range v.Outputs {
			if _, err := last.NewChannelCodec(batchSize); err != nil {
				return edgeCodecError(last, o.To, err)
			}
		}
	}
	return nil
}

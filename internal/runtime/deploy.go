package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/barrier"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
)

// deployment is the execution graph of one attempt: every subtask's Task,
// wired with gates and writers.
type deployment struct {
	tasks   []*Task
	all     []checkpoint.TaskID
	sources []checkpoint.TaskID
}

// deploy builds the execution graph for one attempt. Channel i of a gate
// carries, input by input, the producer subtasks in order.
func (jm *jobManager) deploy(ctx context.Context, attempt int, rp *restorePoint, gw JobGateway) (*deployment, error) {
	cfg := jm.cfg
	gates := make([][]*network.Gate, len(jm.jg.Vertices))
	offsets := make([][]int, len(jm.jg.Vertices))
	for _, v := range jm.jg.Vertices {
		if v.IsSource() {
			continue
		}
		total := 0
		for _, in := range v.Inputs {
			offsets[v.ID] = append(offsets[v.ID], total)
			total += in.From.Parallelism
		}
		var gopts []network.GateOption
		if cfg.Unaligned && cfg.AlignedTimeout > 0 {
			// Alternating mode: an announcement overtakes the data ahead of
			// each barrier, so the alignment timer starts even when the
			// barrier is stuck behind backlog.
			gopts = append(gopts, network.WithAnnouncements())
		}
		for s := 0; s < v.Parallelism; s++ {
			gates[v.ID] = append(gates[v.ID], network.NewGate(total, cfg.CreditsPerChannel, gopts...))
		}
	}
	dep := &deployment{}
	sw := &storeWriters{fs: jm.store}
	for _, v := range jm.jg.Vertices {
		for s := 0; s < v.Parallelism; s++ {
			t, err := jm.newTask(ctx, v, s, attempt, rp, gw, gates, offsets, sw)
			if err != nil {
				return nil, err
			}
			dep.tasks = append(dep.tasks, t)
			dep.all = append(dep.all, t.ID)
			if v.IsSource() {
				dep.sources = append(dep.sources, t.ID)
			}
		}
	}
	return dep, nil
}

func (jm *jobManager) newTask(ctx context.Context, v *Vertex, s, attempt int, rp *restorePoint, gw JobGateway, gates [][]*network.Gate, offsets [][]int, sw *storeWriters) (*Task, error) {
	cfg := jm.cfg
	id := checkpoint.TaskID{Vertex: v.ID, Subtask: s}
	t := &Task{
		ID:      id,
		Name:    v.Name(),
		mail:    newMailbox(),
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
	type outChannel struct {
		gate  *network.Gate
		index int
	}
	var sent []outChannel
	for _, o := range v.Outputs {
		channels := make([]*network.Channel, o.To.Parallelism)
		base := offsets[o.To.ID][o.InputIndex]
		for j := range channels {
			channels[j] = gates[o.To.ID][j].Channel(base + s)
			sent = append(sent, outChannel{gates[o.To.ID][j], base + s})
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
				waits += c.gate.Stats().Channels[c.index].BackpressureWaits
			}
			return waits
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
	t.gate = gates[v.ID][s]
	n := 0
	for _, in := range v.Inputs {
		n += in.From.Parallelism
	}
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
	if cfg.Unaligned || h != nil {
		chans, err := channelInfos(v, cfg.BatchSize)
		if err != nil {
			return nil, err
		}
		t.chans = chans
	} else if chans, err := channelInfos(v, cfg.BatchSize); err == nil {
		// Aligned: the codecs only measure what alignment holds back
		// (task_stats.go); a record type without one measures nothing.
		t.chans = chans
	}
	if h != nil {
		t.replay = h
		t.openState = rp.fs.OpenFile
		cfg.Status.RestoredChannelStateBytes.Add(h.File.Size)
	}
	return t, nil
}

// channelInfos describes every gate channel of a subtask of v for channel
// state: its input, producer and the producer's codec (one per input). A
// record type without a codec fails the job for good: no restart can
// change it.
func channelInfos(v *Vertex, batchSize int) ([]channelInfo, error) {
	var chans []channelInfo
	for i, in := range v.Inputs {
		last := in.From.Chain[len(in.From.Chain)-1]
		c, err := last.NewChannelCodec(batchSize)
		if err != nil {
			return nil, Unrecoverable(fmt.Errorf("unaligned checkpoints store in-flight records of edge %q -> %q (type %s): %w; make the type encodable or disable execution.checkpointing.unaligned.enabled", last.Name, v.Name(), last.OutType, err))
		}
		for p := 0; p < in.From.Parallelism; p++ {
			chans = append(chans, channelInfo{input: i, producerUID: last.UID, producerParallelism: in.From.Parallelism, producer: p, codec: c})
		}
	}
	return chans, nil
}

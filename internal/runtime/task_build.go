package runtime

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
)

// taskInputs is what a task of one execution is built from: the prepared
// job, the execution's deployment, and what the TaskExecutor made for it.
type taskInputs struct {
	prep    *PreparedJob
	td      deployment.TaskDeployment
	mail    *mailbox
	restore *restorePoint
	gw      JobGateway
	gate    *network.Gate // nil for a source
	links   *taskLinks
	store   *storeWriters
}

// newTask builds the task of one execution: its chain (operators and
// their contexts, writers to its consumers' channels), and for a consuming
// task its gate, barrier handler and channel state.
func newTask(ctx context.Context, in taskInputs) (*Task, error) {
	cfg := &in.prep.Config
	id := in.td.Exec.Task
	v := in.prep.Graph.Vertices[id.Vertex]
	t := &Task{
		ID:      id,
		Name:    v.Name(),
		mail:    in.mail,
		gw:      in.gw,
		faults:  cfg.Faults,
		logger:  cfg.Logger.With("task", v.Name(), "subtask", id.Subtask),
		now:     cfg.Now,
		metrics: &TaskMetrics{job: cfg.recorder()}, // source records (sources only), restore time
		rec:     barrierRecovery{},                 // the mode's own, when it has one, is set at deployment
		out: outputFlush{
			bufferTimeout: cfg.BufferTimeout,
			lastFlush:     cfg.Now(),
			debt:          network.NewDebt(),
		},
		ua: unalignedState{
			enabled:          cfg.Unaligned,
			priorityTriggers: cfg.Unaligned && cfg.AlignedTimeout == 0,
			maxChannelState:  cfg.MaxChannelStateBytes,
			alignTimeout:     cfg.AlignedTimeout,
		},
	}
	ch, err := newChain(ctx, in, v, t.logger, t.metrics, t.out.debt)
	if err != nil {
		return nil, err
	}
	t.chain = ch
	t.ua.inBand = make([]bool, len(v.Outputs))
	for k, o := range v.Outputs {
		t.ua.inBand[k] = o.To.Chain[0].AlignedBarriers
	}
	t.ckpt.store = in.store
	t.setupEventTime(cfg.AutoWatermarkInterval, len(in.td.Inputs))
	if v.IsSource() {
		return t, nil
	}
	n := len(in.td.Inputs)
	t.gate = in.gate
	t.links = in.links
	t.end.ended = make([]bool, n)
	t.ua.lastSeq = make([]uint64, n)
	t.ckpt.handler = newBarrierHandler(cfg, n, v.Chain[0].AlignedBarriers)
	// The channel state of an unaligned checkpoint is replayed whatever
	// the job's mode now: those in-flight records are part of its state.
	parts := in.restore.channelReplayFor(v, id.Subtask)
	if t.ua.chans, err = gateCodecs(v, cfg, in.links, parts != nil); err != nil {
		return nil, err
	}
	if parts != nil {
		t.replay = channelReplay{parts: parts, open: in.restore.fs.OpenFile}
		countRestoredChannelState(cfg.recorder(), v, in.td, in.links.self, parts)
	}
	return t, nil
}

// newChain builds the chain of a task of v: its operators with their
// restored state, the writers of the last one, the links between them and
// the head.
func newChain(ctx context.Context, in taskInputs, v *dataflow.Vertex, logger *slog.Logger, metrics *TaskMetrics, debt *network.Debt) (chain, error) {
	var c chain
	var err error
	if c.ops, c.ocs, err = newOperators(ctx, in, v, logger, metrics); err != nil {
		return c, err
	}
	if c.writers, err = newWriters(in, v, metrics, debt); err != nil {
		return c, err
	}
	if err := connectChain(v, c.ops, c.writers); err != nil {
		return c, err
	}
	if v.IsSource() {
		src, ok := c.ops[0].(dataflow.SourceOperator)
		if !ok {
			return c, fmt.Errorf("operator %q has no inputs and is not a source", v.Chain[0].Name)
		}
		c.source = src
		return c, nil
	}
	if head := v.Chain[0]; head.InputsOf != nil {
		c.byChannel, err = inputsByChannel(v, c.ops[0])
		return c, err
	}
	if c.input, err = v.Chain[0].InputOf(c.ops[0]); err != nil {
		return c, fmt.Errorf("operator %q: connect input: %w", v.Chain[0].Name, err)
	}
	return c, nil
}

// inputsByChannel lays the input functions of a head with inputs of
// different types out as the gate lays out its channels: input by input,
// one channel per producer subtask.
func inputsByChannel(v *dataflow.Vertex, op dataflow.Operator) ([]dataflow.InputFunc, error) {
	head := v.Chain[0]
	fns, err := head.InputsOf(op)
	if err != nil {
		return nil, fmt.Errorf("operator %q: connect inputs: %w", head.Name, err)
	}
	if len(fns) != len(v.Inputs) {
		return nil, fmt.Errorf("operator %q: %d input functions for %d inputs", head.Name, len(fns), len(v.Inputs))
	}
	_, total := gateOffsets(v)
	byChannel := make([]dataflow.InputFunc, 0, total)
	for i, in := range v.Inputs {
		for range in.From.Parallelism {
			byChannel = append(byChannel, fns[i])
		}
	}
	return byChannel, nil
}

// newOperators makes the operators of v's chain for the execution's
// subtask, each with its context and restored state.
func newOperators(ctx context.Context, in taskInputs, v *dataflow.Vertex, logger *slog.Logger, metrics *TaskMetrics) ([]dataflow.Operator, []*dataflow.OperatorContext, error) {
	cfg := &in.prep.Config
	id := in.td.Exec.Task
	s := id.Subtask
	var ops []dataflow.Operator
	var ocs []*dataflow.OperatorContext
	for _, n := range v.Chain {
		kgs := keygroup.RangeFor(n.MaxParallelism, n.Parallelism, s)
		restored, err := in.restore.forOperator(ctx, n.UID, s, n.Parallelism, kgs)
		if err != nil {
			return nil, nil, err
		}
		if restored != nil {
			restored.DropUnrestored = cfg.AllowNonRestoredState
		}
		ops = append(ops, n.NewOperator(s))
		ocs = append(ocs, &dataflow.OperatorContext{
			JobName: cfg.JobName, Task: id, UID: n.UID, Name: n.Name, Subtask: s, Parallelism: n.Parallelism,
			MaxParallelism: n.MaxParallelism, KeyGroups: kgs, Attempt: in.td.Exec.Attempt, Restored: restored,
			BatchSize: cfg.BatchSize, Faults: cfg.Faults, Logger: logger.With("operator", n.Name), Now: cfg.Now,
			StateBackend: cfg.StateBackend, AutoWatermarkInterval: cfg.AutoWatermarkInterval,
			LateRecordsDropped: &metrics.LateRecordsDropped, Gauges: &metrics.Gauges, Mailbox: operatorMailbox{in.mail},
			Async: &metrics.Async, Storage: in.store.jobStorage(cfg), TaskSnapshots: !cfg.snapshotsOnBarriers(),
		})
	}
	return ops, ocs, nil
}

// newWriters makes a writer per outgoing edge of the chain's last node,
// over a sender per consumer (local or remote), counting into metrics and
// overdrawing into debt. The senders also report the task's backpressure
// and credits.
func newWriters(in taskInputs, v *dataflow.Vertex, metrics *TaskMetrics, debt *network.Debt) ([]dataflow.Writer, error) {
	cfg := &in.prep.Config
	td := in.td
	s := td.Exec.Task.Subtask
	last := v.Chain[len(v.Chain)-1]
	if len(td.Outputs) != len(v.Outputs) {
		return nil, fmt.Errorf("deploy %s: %d output edges, vertex %q has %d", td.Exec, len(td.Outputs), v.Name(), len(v.Outputs))
	}
	var writers []dataflow.Writer
	var sent []network.Sender
	for k, o := range v.Outputs {
		if len(td.Outputs[k]) != o.To.Parallelism {
			return nil, fmt.Errorf("deploy %s: output to %q has %d consumers, the vertex %d", td.Exec, o.To.Name(), len(td.Outputs[k]), o.To.Parallelism)
		}
		offsets, _ := gateOffsets(o.To)
		channels := make([]network.Sender, o.To.Parallelism)
		f := o.Edge.Output(last)
		var codec dataflow.ChannelCodec // the edge's encoder, made once for its remote channels
		encoder := func() (dataflow.ChannelCodec, error) {
			if codec != nil {
				return codec, nil
			}
			c, err := f.NewChannelCodec(cfg.BatchSize)
			if err != nil {
				return nil, EdgeCodecError(last, f, o.To, err)
			}
			codec = c
			return c, nil
		}
		for j := range channels {
			c, err := in.links.sender(td.Exec, k, j, offsets[o.InputIndex]+s, td.Outputs[k][j], encoder)
			if err != nil {
				return nil, err
			}
			channels[j] = c
			sent = append(sent, c)
		}
		opts := []network.WriterOption{network.WithOverdraft(cfg.MaxOverdraft, debt)}
		if f.Timed {
			opts = append(opts, network.WithTimestamps())
		}
		w, err := f.NewWriter(channels, o.Edge, f.NewPool(cfg.BatchSize), s, last.MaxParallelism, &metrics.RecordsOut, opts...)
		if err != nil {
			return nil, fmt.Errorf("operator %q: output to %q: %w", last.Name, o.To.Name(), err)
		}
		writers = append(writers, w)
	}
	if len(sent) > 0 {
		metrics.watchSenders(sent)
	}
	return writers, nil
}

// connectChain sets every operator's output, from the tail: the last
// one's are the writers (of its main output, and of each side output),
// the others' the next operator.
func connectChain(v *dataflow.Vertex, ops []dataflow.Operator, writers []dataflow.Writer) error {
	var outs []any
	sides := map[string][]any{}
	var tags []string // in first-seen order, for a deterministic wiring
	for k, w := range writers {
		tag := v.Outputs[k].Edge.Tag
		if tag == "" {
			outs = append(outs, w)
			continue
		}
		if _, ok := sides[tag]; !ok {
			tags = append(tags, tag)
		}
		sides[tag] = append(sides[tag], w)
	}
	if len(tags) > 0 {
		if err := connectSideOutputs(v, ops[len(ops)-1], sides, tags); err != nil {
			return err
		}
	}
	for i := len(v.Chain) - 1; i >= 0; i-- {
		n := v.Chain[i]
		if i < len(v.Chain)-1 {
			outs = []any{ops[i+1]}
		}
		setter, emits := ops[i].(dataflow.OutputSetter)
		if len(outs) == 0 {
			continue
		}
		if !emits {
			return fmt.Errorf("operator %q produces no output but has consumers", n.Name)
		}
		out, err := n.Combine(outs)
		if err != nil {
			return fmt.Errorf("operator %q: connect output: %w", n.Name, err)
		}
		if err := setter.SetOutput(out); err != nil {
			return fmt.Errorf("operator %q: connect output: %w", n.Name, err)
		}
	}
	return nil
}

// gateCodecs returns the codec of every gate channel of a consuming task
// of v, when it needs them: remote channels deliver encoded batches,
// unaligned checkpoints record and replay encoded channel state. In
// aligned mode they only measure what alignment holds back (task_stats.go),
// so a record type without one measures nothing instead of failing.
func gateCodecs(v *dataflow.Vertex, cfg *JobConfig, links *taskLinks, replay bool) ([]channelInfo, error) {
	switch {
	case links.hasRemoteInputs():
		return channelInfos(v, cfg.BatchSize, whyRemote)
	case cfg.Unaligned || replay:
		return channelInfos(v, cfg.BatchSize, whyUnaligned)
	}
	chans, err := channelInfos(v, cfg.BatchSize, whyUnaligned)
	if err != nil {
		return nil, nil
	}
	return chans, nil
}

// countRestoredChannelState adds the size of the channel state a task
// replays to the job's status (after a rescale, the segments of the
// channels it reads), and the part of it that came over remote channels.
func countRestoredChannelState(st *jobstatus.Recorder, v *dataflow.Vertex, td deployment.TaskDeployment, self deployment.ResourceID, parts []replayPart) {
	if st == nil {
		return
	}
	offsets, _ := gateOffsets(v)
	for _, p := range parts {
		if p.gate == nil {
			st.RestoredChannelStateBytes.Add(p.handle.File.Size)
		}
		for i, c := range p.handle.Channels {
			if c.Input >= len(offsets) {
				continue // checkChannelState refused such a checkpoint
			}
			ch := offsets[c.Input] + c.Producer
			if p.gate != nil {
				if ch = p.gate[i]; ch < 0 {
					continue
				}
			}
			remote := ch < len(td.Inputs) && td.Inputs[ch].TM != self
			for _, seg := range c.Segments {
				if p.gate != nil {
					st.RestoredChannelStateBytes.Add(seg.Length)
				}
				if remote {
					st.RestoredRemoteChannelStateBytes.Add(seg.Length)
				}
			}
		}
	}
}

// connectSideOutputs hands the last operator of v's chain the writers of
// each of its side outputs, combined by the side output's factories.
func connectSideOutputs(v *dataflow.Vertex, op dataflow.Operator, sides map[string][]any, tags []string) error {
	n := v.Chain[len(v.Chain)-1]
	setter, ok := op.(dataflow.SideOutputSetter)
	if !ok {
		return fmt.Errorf("operator %q has side output consumers but no side outputs", n.Name)
	}
	for _, tag := range tags {
		var f *dataflow.OutputFactories
		for k := range v.Outputs {
			if v.Outputs[k].Edge.Tag == tag {
				f = v.Outputs[k].Edge.Side
				break
			}
		}
		out, err := f.Combine(sides[tag])
		if err != nil {
			return fmt.Errorf("operator %q: connect side output %q: %w", n.Name, tag, err)
		}
		if err := setter.SetSideOutput(tag, out); err != nil {
			return fmt.Errorf("operator %q: connect side output %q: %w", n.Name, tag, err)
		}
	}
	return nil
}

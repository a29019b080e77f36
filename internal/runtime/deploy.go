package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network"
)

// build creates the tasks of a deployment on this TaskExecutor: first a
// gate per consuming task, registered for its producers, then each task
// with its operators, restored state and writers. It returns the index of
// the execution it failed for.
func (te *TaskExecutor) build(ctx context.Context, j *teJob, d deployment.Deployment, execs []*execution) ([]*Task, int, error) {
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
	jrec := j.recovery()
	for i := range d.Tasks {
		links[i] = &taskLinks{self: te.cfg.ID, job: d.Job, parts: j.parts, net: te.cfg.Network, credits: cfg.CreditsPerChannel, announce: cfg.Unaligned && cfg.AlignedTimeout > 0}
		execs[i].links = links[i]
	}
	// Every TaskManager the channels name gets its connection now, for
	// outputs as for inputs: of two TaskManagers the smaller id dials, so
	// it must learn of the other even when it only produces for it.
	if peers := deploymentPeers(&d, te.cfg.ID); len(peers) > 0 {
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
		if !v.IsSource() {
			if _, total := gateOffsets(v); total != len(td.Inputs) {
				return nil, i, fmt.Errorf("deploy %s: %d input channels, vertex %q has %d", td.Exec, len(td.Inputs), v.Name(), total)
			}
		}
		// The mode's part of the execution, if it has one, makes its
		// channels from here on (taskLinks.rec).
		links[i].rec = jrec.NewExecution(ExecInfo{
			Exec: td.Exec, Vertex: v, Inputs: td.Inputs, InputEdges: inputEdges(v, td.Inputs),
			Restore: rp.view(), Life: execs[i].ctx, Fail: execs[i].failAsync,
			Self: te.cfg.ID, Net: te.cfg.Network,
		})
		if v.IsSource() {
			continue
		}
		gates[i] = network.NewGate(len(td.Inputs), cfg.CreditsPerChannel, gopts...)
		j.parts.register(td.Exec, gates[i], td.Inputs)
		if err := links[i].openInputs(ctx, td.Exec, v, td.Inputs, gates[i], execs[i].failAsync); err != nil {
			return nil, i, err
		}
		if r := links[i].rec; r != nil {
			if err := r.ConnectInputs(gates[i]); err != nil {
				return nil, i, fmt.Errorf("deploy %s: %w", td.Exec, err)
			}
		}
	}
	sw := &storeWriters{fs: j.prep.Store}
	gw := func(attempt int) JobGateway { return execGateway{jm: te.cfg.JobMaster, job: d.Job, attempt: attempt} }
	tasks := make([]*Task, 0, len(d.Tasks))
	for i, td := range d.Tasks {
		t, err := newTask(ctx, taskInputs{prep: j.prep, td: td, mail: execs[i].mail, restore: rp, gw: gw(td.Exec.Attempt), gate: gates[i], links: links[i], store: sw})
		if err != nil {
			return nil, i, err
		}
		if r := links[i].rec; r != nil {
			if t.rec, err = r.Setup(ctx, taskView{t}); err != nil {
				return nil, i, fmt.Errorf("deploy %s: %w", td.Exec, err)
			}
		}
		tasks = append(tasks, t)
	}
	return tasks, 0, nil
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
func channelInfos(v *dataflow.Vertex, batchSize int, why [2]string) ([]channelInfo, error) {
	var chans []channelInfo
	for i, in := range v.Inputs {
		last := in.From.Chain[len(in.From.Chain)-1]
		f := in.Edge.Output(last)
		c, err := f.NewChannelCodec(batchSize)
		if err != nil {
			return nil, Unrecoverable(fmt.Errorf("%s edge %q -> %q (type %s): %w; make the type encodable or %s", why[0], last.Name, v.Name(), f.OutType, err, why[1]))
		}
		for p := 0; p < in.From.Parallelism; p++ {
			chans = append(chans, channelInfo{input: i, producerUID: last.UID, producerParallelism: in.From.Parallelism, producer: p, codec: wireCodec{c}})
		}
	}
	return chans, nil
}

// EdgeCodecError is the unrecoverable error of an edge whose records have
// no encoding. Exported for the modes that encode an edge's records
// themselves (internal/runtime/weakrt: a remote consumer's log, a
// snapshot's stored logs), so every such failure reads the same.
func EdgeCodecError(last *dataflow.Node, f *dataflow.OutputFactories, to *dataflow.Vertex, err error) error {
	return Unrecoverable(fmt.Errorf("records of edge %q -> %q (type %s) cannot cross TaskManagers: %w; make the type encodable or implement encoding.BinaryMarshaler and BinaryUnmarshaler (docs/api.md, \"Records between processes\")", last.Name, to.Name(), f.OutType, err))
}

// checkEdgeCodecs makes the encoder of every edge between vertices, so a
// job whose records cannot cross TaskManagers fails at submission, before
// anything runs, naming the edge.
func checkEdgeCodecs(jg *dataflow.JobGraph, batchSize int) error {
	for _, v := range jg.Vertices {
		last := v.Chain[len(v.Chain)-1]
		for _, o := range v.Outputs {
			f := o.Edge.Output(last)
			if _, err := f.NewChannelCodec(batchSize); err != nil {
				return EdgeCodecError(last, f, o.To, err)
			}
		}
	}
	return nil
}

// inputEdges returns, per gate channel of a consuming task of v, the
// index of the edge behind it among its producer's output edges (the
// Edge of its partition key); nil for a source.
func inputEdges(v *dataflow.Vertex, inputs []deployment.ChannelDesc) []int {
	if v.IsSource() {
		return nil
	}
	offsets, _ := gateOffsets(v)
	edges := make([]int, len(inputs))
	for ch := range inputs {
		input := 0
		for input+1 < len(offsets) && offsets[input+1] <= ch {
			input++
		}
		edges[ch] = outputEdge(v.Inputs[input].From, v, input)
	}
	return edges
}

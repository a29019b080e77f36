package runtime

import (
	"fmt"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
)

// The channel state of an unaligned checkpoint is the records a barrier
// overtook, recorded by each consumer subtask per (input, producer
// subtask) channel. Restored at the parallelism it was recorded at, each
// subtask replays its own file, each frame on the channel it came from.
//
// Restored at another parallelism (of the consumer or of a producer), the
// records are redistributed the way the producers would send them now:
//   - on a hash input, a recorded record belongs to the subtask that owns
//     its key group now, as the keyed state of that key group does; a new
//     subtask reads the files of the old subtasks whose key groups overlap
//     its own and keeps the records of its key groups;
//   - on a forward or rebalance input, which carry no key, old subtask s's
//     channels go whole to new subtask s mod the new parallelism;
//   - on a broadcast input every old subtask held its own unprocessed
//     suffix of the same stream; new subtask j continues from where old
//     subtask j mod the old parallelism stood, taking its channels whole.
//     (Broadcast state is restored from one subtask's copy, and the
//     operators that hold it take their inputs aligned, so they record no
//     channel state to begin with.)
//
// Every subtask replays all it takes before it polls its gate, so every
// restored record comes before any new one on every channel: per key, what
// was sent before the checkpoint is processed before what is sent after
// it, which is the order a keyed operator relies on. Within one old
// channel the recorded order is kept (frames are read in file order).

// replayPart is one channel-state file a restoring subtask processes.
type replayPart struct {
	handle *checkpoint.ChannelStateHandle
	// gate is nil when the file was recorded at the layout the job has
	// now: each frame goes to the gate channel it names. Otherwise
	// gate[i] is the gate channel the records of handle channel i go to,
	// -1 for a channel this subtask does not take, and keys[i], if set,
	// keeps only the records of this subtask's key groups.
	gate []int
	keys []*keyGroupFilter
}

// keyGroupFilter selects the records of a hash input a subtask owns now.
type keyGroupFilter struct {
	hash           any // the edge's func(T) uint32
	maxParallelism int // the producer's, which its partitioner routed by
	own            keygroup.Range
}

func (f *keyGroupFilter) keep(kg int) bool { return f.own.Contains(kg) }

// checkChannelState fails when the checkpoint holds in-flight records
// (channel state of an unaligned checkpoint) the job cannot take back: a
// consumer that is not a chain head any more, an input that is gone or
// comes from another producer, or a batch format this build cannot read.
func (rp *restorePoint) checkChannelState(jg *dataflow.JobGraph) error {
	if rp == nil {
		return nil
	}
	heads := map[string]*dataflow.Vertex{}
	for _, v := range jg.Vertices {
		heads[v.Chain[0].UID] = v
	}
	fix := "restore with the old job's graph, or take a savepoint (always aligned) of the old job and restore that"
	for _, op := range rp.md.Operators {
		v := heads[op.UID]
		for _, s := range op.Subtasks {
			h := s.State.Channels
			if h == nil || len(h.Channels) == 0 {
				continue
			}
			if h.BatchFormat != checkpoint.ChannelBatchTimed {
				return fmt.Errorf("checkpoint %s holds in-flight records (unaligned checkpoint) in batch format %d, written by a weir before event time; this build reads format %d: restore it with the weir that wrote it, or restore from a savepoint or an aligned checkpoint", rp.path, h.BatchFormat, checkpoint.ChannelBatchTimed)
			}
			if v == nil {
				return fmt.Errorf("checkpoint %s holds in-flight records (unaligned checkpoint) of operator uid %q, which is no longer the first operator of a task in this job; in-flight records cannot be redistributed: %s", rp.path, op.UID, fix)
			}
			for _, c := range h.Channels {
				if c.Input < 0 || c.Input >= len(v.Inputs) {
					return fmt.Errorf("checkpoint %s holds in-flight records of operator %q for input %d, which has %d inputs now; in-flight records cannot be redistributed: %s", rp.path, v.Chain[0].Name, c.Input, len(v.Inputs), fix)
				}
				in := v.Inputs[c.Input]
				uid := in.From.Chain[len(in.From.Chain)-1].UID
				if c.ProducerUID != uid {
					return fmt.Errorf("checkpoint %s holds in-flight records of operator %q from %q, now its input %d comes from %q; in-flight records cannot be redistributed: %s", rp.path, v.Chain[0].Name, c.ProducerUID, c.Input, uid, fix)
				}
				if c.Producer < 0 || c.Producer >= c.ProducerParallelism {
					return fmt.Errorf("checkpoint %s holds in-flight records of operator %q from producer subtask %d of %d: corrupt metadata", rp.path, v.Chain[0].Name, c.Producer, c.ProducerParallelism)
				}
			}
		}
	}
	return nil
}

// channelsMoved reports whether the channel state of op was recorded at
// another layout than v's: the consumer's parallelism or a producer's
// changed since.
func channelsMoved(op checkpoint.OperatorState, v *dataflow.Vertex) bool {
	if op.Parallelism != v.Parallelism {
		return true
	}
	for _, s := range op.Subtasks {
		if h := s.State.Channels; h != nil {
			for _, c := range h.Channels {
				if c.Input < len(v.Inputs) && c.ProducerParallelism != v.Inputs[c.Input].From.Parallelism {
					return true
				}
			}
		}
	}
	return false
}

// channelReplayFor returns the channel state subtask of v replays, in
// order, nil if none. checkChannelState vouched that it fits the job.
func (rp *restorePoint) channelReplayFor(v *dataflow.Vertex, subtask int) []replayPart {
	if rp == nil {
		return nil
	}
	op := rp.md.Operator(v.Chain[0].UID)
	if op == nil {
		return nil
	}
	if !channelsMoved(*op, v) {
		for _, s := range op.Subtasks {
			if s.Subtask == subtask && s.State.Channels != nil && len(s.State.Channels.Channels) > 0 {
				return []replayPart{{handle: s.State.Channels}}
			}
		}
		return nil
	}
	subs := append([]checkpoint.SubtaskStateEntry(nil), op.Subtasks...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Subtask < subs[j].Subtask })
	offsets, _ := gateOffsets(v)
	var parts []replayPart
	for _, s := range subs {
		h := s.State.Channels
		if h == nil || len(h.Channels) == 0 {
			continue
		}
		p := replayPart{handle: h, gate: make([]int, len(h.Channels)), keys: make([]*keyGroupFilter, len(h.Channels))}
		taken := false
		for i, c := range h.Channels {
			p.gate[i] = -1
			in := v.Inputs[c.Input]
			ch := offsets[c.Input] + c.Producer%in.From.Parallelism
			switch in.Edge.Partition {
			case dataflow.Hash:
				// Old subtask s received the key groups the producer
				// routed to it at the old parallelism; this subtask owns
				// the ones it routes here now.
				maxP := in.From.Chain[len(in.From.Chain)-1].MaxParallelism
				own := keygroup.RangeFor(maxP, v.Parallelism, subtask)
				had := keygroup.RangeFor(maxP, op.Parallelism, s.Subtask)
				if own.Start < had.End && had.Start < own.End {
					p.gate[i], p.keys[i] = ch, &keyGroupFilter{hash: in.Edge.KeyHash, maxParallelism: maxP, own: own}
				}
			case dataflow.Forward, dataflow.Rebalance:
				if s.Subtask%v.Parallelism == subtask {
					p.gate[i] = ch
				}
			case dataflow.Broadcast:
				if subtask%op.Parallelism == s.Subtask {
					p.gate[i] = ch
				}
			}
			taken = taken || p.gate[i] >= 0
		}
		if taken {
			parts = append(parts, p)
		}
	}
	return parts
}

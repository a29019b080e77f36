package runtime

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// restorePoint is a verified completed checkpoint and the storage view its
// state files are read through.
type restorePoint struct {
	md   *checkpoint.Metadata
	fs   *storage.FS
	path string
	// own is true when fs is the job's own storage (not --from another
	// job's folder): new checkpoints may then reference its shared files.
	own bool
}

// checkOperators fails when the checkpoint holds state for an operator the
// job does not have: dropping state silently would be a wrong restore.
func (rp *restorePoint) checkOperators(jg *dataflow.JobGraph, allowNonRestored bool) error {
	if rp == nil {
		return nil
	}
	uids := map[string]bool{}
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			uids[n.UID] = true
		}
	}
	maxP := map[string]int{}
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			maxP[n.UID] = n.MaxParallelism
		}
	}
	for _, op := range rp.md.Operators {
		if m, ok := maxP[op.UID]; ok && hasState(op) && op.MaxParallelism != 0 && op.MaxParallelism != m {
			return fmt.Errorf("checkpoint %s: operator uid %q was checkpointed with max parallelism %d, the job now has %d: keyed state is split into that many key groups, so pipeline.max-parallelism must stay %d for the life of the state", rp.path, op.UID, op.MaxParallelism, m, op.MaxParallelism)
		}
		if !uids[op.UID] && hasState(op) && !allowNonRestored {
			return fmt.Errorf("checkpoint %s holds state of operator uid %q, which this job does not have: give the operator its old uid, or start without that state (--allow-non-restored-state)", rp.path, op.UID)
		}
	}
	return nil
}

func hasState(op checkpoint.OperatorState) bool {
	for _, s := range op.Subtasks {
		if s.State.Keyed != nil || len(s.State.Operator) > 0 || s.State.Channels != nil || s.State.Incremental != nil {
			return true
		}
	}
	return false
}

// UnionStatePrefix starts the name of operator list state that is restored
// as a union: every subtask receives the elements of all old subtasks (as
// Flink's union list state), instead of a round-robin share.
const UnionStatePrefix = "union/"

// BroadcastStatePrefix starts the name of operator list state that holds
// broadcast state. Every subtask holds the same broadcast state, so one
// subtask (subtask 0) stores it and every subtask of the restored
// operator, at any parallelism, receives that one copy: the elements of
// the lowest-numbered old subtask that stored any (a checkpoint holding a
// copy per subtask restores the same way).
const BroadcastStatePrefix = "broadcast/"

// forOperator assembles one operator subtask's share of the checkpoint:
// keyed blocks of every old subtask whose key groups overlap kgs, and the
// operator list state (redistributed round-robin if the parallelism
// changed, Flink's split-distribute).
func (rp *restorePoint) forOperator(ctx context.Context, uid string, subtask, parallelism int, kgs keygroup.Range) (*dataflow.RestoredState, error) {
	if rp == nil {
		return nil, nil
	}
	op := rp.md.Operator(uid)
	if op == nil {
		return nil, nil // an operator new to the job starts fresh
	}
	rs := &dataflow.RestoredState{Checkpoint: rp.md.ID, Schemas: op.States}
	subs := append([]checkpoint.SubtaskStateEntry(nil), op.Subtasks...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Subtask < subs[j].Subtask })
	rs.Incremental, rs.Files, rs.OwnShared = rp.incrementalFor(subs, kgs)
	for _, s := range subs {
		h := s.State.Keyed
		if h == nil {
			continue
		}
		var mine []checkpoint.KeyGroupOffset
		for _, kg := range h.KeyGroups {
			if kgs.Contains(kg.KeyGroup) {
				mine = append(mine, kg)
			}
		}
		if len(mine) == 0 {
			continue
		}
		rs.Keyed = append(rs.Keyed, rp.keyedSource(h.File, mine))
	}
	for _, s := range subs {
		rs.Blobs = append(rs.Blobs, s.State.Blobs...)
	}
	if len(rs.Blobs) > 0 {
		rs.Files = rp.fs
	}
	rs.Operator = map[string][][]byte{}
	names := map[string]bool{}
	for _, s := range subs {
		for name := range s.State.Operator {
			names[name] = true
		}
	}
	for name := range names {
		if strings.HasPrefix(name, BroadcastStatePrefix) {
			for _, s := range subs {
				if len(s.State.Operator[name]) > 0 {
					rs.Operator[name] = s.State.Operator[name]
					break
				}
			}
			continue
		}
		if strings.HasPrefix(name, UnionStatePrefix) {
			// Union state: every subtask gets every element.
			for _, s := range subs {
				rs.Operator[name] = append(rs.Operator[name], s.State.Operator[name]...)
			}
			continue
		}
		if op.Parallelism == parallelism {
			for _, s := range subs {
				if s.Subtask == subtask && s.State.Operator[name] != nil {
					rs.Operator[name] = s.State.Operator[name]
				}
			}
			continue
		}
		i := 0
		for _, s := range subs {
			for _, e := range s.State.Operator[name] {
				if i%parallelism == subtask {
					rs.Operator[name] = append(rs.Operator[name], e)
				}
				i++
			}
		}
	}
	return rs, nil
}

// keyedSource is a keyed state file of the checkpoint as the backend
// streams it: opened when the operator restores (not here, at deployment),
// read once, its size and CRC32C checked as it is read
// (storage.FS.OpenFile), so that no restore holds a whole file in memory.
func (rp *restorePoint) keyedSource(f checkpoint.StateFile, mine []checkpoint.KeyGroupOffset) state.RestoreSource {
	fs := rp.fs
	return state.RestoreSource{
		Name: f.Path, Size: f.Size, KeyGroups: mine,
		Open: func(ctx context.Context) (io.ReadCloser, error) { return fs.OpenFile(ctx, f) },
	}
}

// metadataFor groups acknowledged task states by operator uid.
func metadataFor(jobID string, jg *dataflow.JobGraph, id checkpoint.ID, kind checkpoint.Kind, ts time.Time, states []checkpoint.TaskState) (*checkpoint.Metadata, error) {
	md := &checkpoint.Metadata{JobID: jobID, ID: id, Kind: kind, Timestamp: ts}
	index := map[string]int{}
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			index[n.UID] = len(md.Operators)
			md.Operators = append(md.Operators, checkpoint.OperatorState{UID: n.UID, Parallelism: n.Parallelism, MaxParallelism: n.MaxParallelism})
		}
	}
	for _, ts := range states {
		for _, os := range ts.Operators {
			i, ok := index[os.UID]
			if !ok {
				continue
			}
			md.Operators[i].Subtasks = append(md.Operators[i].Subtasks, checkpoint.SubtaskStateEntry{Subtask: ts.Task.Subtask, State: os})
		}
	}
	for i := range md.Operators {
		subs := md.Operators[i].Subtasks
		sort.Slice(subs, func(a, b int) bool { return subs[a].Subtask < subs[b].Subtask })
	}
	if err := mergeStateTables(md); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	return md, nil
}

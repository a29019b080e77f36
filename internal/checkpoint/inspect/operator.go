package inspect

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/twophase"
)

// twoPhaseStateName is the list state name under which the root package's
// two-phase-commit sink operator stores its twophase.State (sink.go keeps
// it unexported).
const twoPhaseStateName = "two-phase-commit"

// listStates summarises a subtask's inline operator list state, sorted by
// name (a split list before a union one of the same name). where names the operator and subtask in errors.
func listStates(m map[string][][]byte, where string) ([]ListState, error) {
	out := make([]ListState, 0, len(m))
	for raw, elems := range m {
		name, union := strings.CutPrefix(raw, runtime.UnionStatePrefix)
		ls := ListState{Name: name, Union: union, Elements: len(elems)}
		for _, e := range elems {
			ls.Bytes += int64(len(e))
		}
		if raw == twoPhaseStateName {
			tp, err := twoPhase(elems)
			if err != nil {
				return nil, fmt.Errorf("%s: operator state %q: %w: %w", where, raw, storage.ErrCorrupt, err)
			}
			ls.TwoPhaseCommit = tp
		}
		out = append(out, ls)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return !out[i].Union && out[j].Union
	})
	return out, nil
}

// rawTxn keeps transaction handles as bytes: the report needs their
// checkpoint ids, not their contents, whose type only the sink knows.
type rawTxn struct{}

func (rawTxn) Encode(b []byte) ([]byte, error) { return b, nil }
func (rawTxn) Decode(b []byte) ([]byte, error) { return b, nil }

// twoPhase decodes the elements of a two-phase-commit sink's list state.
func twoPhase(elems [][]byte) (*TwoPhaseCommit, error) {
	tp := &TwoPhaseCommit{Pending: []checkpoint.ID{}}
	for i, e := range elems {
		s, err := twophase.DecodeState(e, rawTxn{})
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		for _, p := range s.Pending {
			tp.Pending = append(tp.Pending, p.ID)
		}
		if s.HasCurrent {
			tp.Open++
		}
	}
	return tp, nil
}

package ordercheck

import (
	"context"
	"fmt"
	"io"

	"github.com/weirstream/weir"
)

// position is a source subtask's checkpointed progress. The subtask is
// kept with it so that a restore that hands a subtask another's position
// (which would silently reorder sequences) fails loudly instead.
type position struct {
	Subtask int64
	Next    int64
}

// seqSource emits (subtask, 0), (subtask, 1), … (subtask, records-1).
type seqSource struct {
	records int64
	payload int

	subtask int64
	next    int64
	pos     *weir.OperatorList[position]
}

// DeclareStates lists the source's position state.
func (s *seqSource) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{weir.OperatorListStateOf[position]("ordercheck-position")}
}

func (s *seqSource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	s.subtask = int64(rc.Subtask())
	pos, err := weir.GetOperatorListState[position](rc, "ordercheck-position")
	if err != nil {
		return err
	}
	s.pos = pos
	s.next = 0
	restored := pos.Get()
	switch {
	case len(restored) == 0 && !rc.Restored():
		return nil
	case len(restored) != 1 || restored[0].Subtask != s.subtask:
		return weir.Unrecoverable(fmt.Errorf("ordercheck source %q subtask %d: restored positions %+v, want exactly one of this subtask: restore at the parallelism the checkpoint was taken with", rc.UID(), s.subtask, restored))
	}
	s.next = restored[0].Next
	return nil
}

func (s *seqSource) Read(ctx context.Context, dst []Record, max int) ([]Record, error) {
	for n := 0; n < max && s.next < s.records; n++ {
		dst = append(dst, Record{Src: s.subtask, Seq: s.next, Payload: newPayload(s.payload, s.subtask, s.next)})
		s.next++
	}
	if s.next >= s.records {
		return dst, io.EOF
	}
	return dst, nil
}

func (s *seqSource) SnapshotState(int64) error {
	s.pos.Update([]position{{Subtask: s.subtask, Next: s.next}})
	return nil
}

func (s *seqSource) Close(context.Context) error { return nil }

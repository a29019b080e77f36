package jobmaster

import (
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// TestTaskFinal checks the task's rule for finishing: only the completion
// of its own final checkpoint (or a later final one) finishes it; an
// aborted final checkpoint is forgotten; an abort of another checkpoint
// changes nothing; without the kind, only its own final checkpoint's id.
func TestTaskFinal(t *testing.T) {
	const (
		periodic = checkpoint.Periodic
		final    = checkpoint.Final
	)
	var f TaskFinal
	if f.Completed(1, final, true) || f.Completed(1, final, false) {
		t.Fatal("a task without a final snapshot finished")
	}
	f.Snapshotted(1, periodic)
	f.Snapshotted(2, final)
	f.Aborted(1) // not its final checkpoint
	if f.ID() != 2 {
		t.Fatalf("final checkpoint %d, want 2", f.ID())
	}
	for _, c := range []struct {
		id    checkpoint.ID
		kind  checkpoint.Kind
		known bool
		want  bool
	}{
		{1, periodic, true, false},
		{2, final, true, true},
		{3, periodic, true, false},
		{3, checkpoint.Savepoint, true, false},
		{3, final, true, true}, // a later final one
		{2, periodic, false, true},
		{3, periodic, false, false},
	} {
		if got := f.Completed(c.id, c.kind, c.known); got != c.want {
			t.Errorf("Completed(%d, %s, known=%v) = %v, want %v", c.id, c.kind, c.known, got, c.want)
		}
	}
	f.Aborted(2)
	if f.ID() != 0 || f.Completed(2, final, true) || f.Completed(3, final, true) || f.Completed(2, periodic, false) {
		t.Fatal("an aborted final checkpoint still finishes the task")
	}
	f.Snapshotted(4, final)
	if !f.Completed(4, final, true) {
		t.Fatal("the next final checkpoint does not finish the task")
	}
}

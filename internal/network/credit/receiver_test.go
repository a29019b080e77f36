package credit

import (
	"errors"
	"strings"
	"testing"
)

func TestReceiverCountsCredits(t *testing.T) {
	r := NewReceiver(3)
	check := func(step string, outstanding, held, unannounced, backlog int, next uint64) {
		t.Helper()
		if r.Outstanding() != outstanding || r.Held() != held || r.Unannounced() != unannounced ||
			r.Backlog() != backlog || r.Next() != next {
			t.Fatalf("%s: outstanding %d held %d unannounced %d backlog %d next %d, want %d %d %d %d %d",
				step, r.Outstanding(), r.Held(), r.Unannounced(), r.Backlog(), r.Next(),
				outstanding, held, unannounced, backlog, next)
		}
	}
	check("new", 3, 0, 0, 0, 0)
	mustAccept(t, r, 0, true, 5)
	mustAccept(t, r, 1, false, 5) // an event takes no credit
	mustAccept(t, r, 2, true, 4)
	check("two data", 1, 2, 0, 4, 3)
	if got := r.Want(4); got != 3 {
		t.Fatalf("Want(4) = %d, want 3 (backlog 4 - 1 outstanding)", got)
	}
	if got := r.Announce(); got != 0 {
		t.Fatalf("Announce() = %d with nothing freed, want 0", got)
	}
	r.Freed()
	r.Freed()
	check("freed", 1, 0, 2, 4, 3)
	if got := r.Want(4); got != 1 {
		t.Fatalf("Want(4) = %d, want 1", got)
	}
	if got := r.Want(2); got != 0 {
		t.Fatalf("Want(2) = %d, want 0", got)
	}
	if got := r.Announce(); got != 2 {
		t.Fatalf("Announce() = %d, want 2", got)
	}
	check("announced", 3, 0, 0, 4, 3)
	if r.Credits() != 3 {
		t.Fatalf("Credits() = %d, want 3", r.Credits())
	}
}

func mustAccept(t *testing.T, r *Receiver, seq uint64, isData bool, backlog int) {
	t.Helper()
	if err := r.Accept(seq, isData, backlog); err != nil {
		t.Fatalf("Accept(%d, %v, %d): %v", seq, isData, backlog, err)
	}
}

func TestReceiverRejectsViolations(t *testing.T) {
	r := NewReceiver(1)
	mustAccept(t, r, 0, true, 0)
	for _, tc := range []struct {
		seq     uint64
		isData  bool
		backlog int
		class   error // ErrOutOfSequence fails the channel, ErrViolation the connection
		want    string
	}{
		{2, false, 0, ErrOutOfSequence, "frame 2, expected 1: frames lost or reordered"},
		{0, false, 0, ErrOutOfSequence, "frame 0, expected 1: frames lost or reordered"},
		{1, true, 0, ErrViolation, "frame 1: data without credit (1 buffers held)"},
		{1, false, -1, ErrViolation, "frame 1: negative backlog -1"},
	} {
		err := r.Accept(tc.seq, tc.isData, tc.backlog)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Fatalf("Accept(%d, %v, %d) = %v, want %q", tc.seq, tc.isData, tc.backlog, err, tc.want)
		}
		other := ErrViolation
		if tc.class == ErrViolation {
			other = ErrOutOfSequence
		}
		if !errors.Is(err, tc.class) || errors.Is(err, other) {
			t.Fatalf("Accept(%d, %v, %d) = %v, want an error of class %q only", tc.seq, tc.isData, tc.backlog, err, tc.class)
		}
	}
	// A refused frame changes nothing: the next valid frame is still 1.
	if r.Next() != 1 || r.Held() != 1 || r.Outstanding() != 0 {
		t.Fatalf("next %d held %d outstanding %d after refusals, want 1 1 0", r.Next(), r.Held(), r.Outstanding())
	}
	mustAccept(t, r, 1, false, 0)
}

func TestReceiverPanicsOnMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"NewReceiver(0)":         func() { NewReceiver(0) },
		"Freed without a buffer": func() { NewReceiver(1).Freed() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

package credit

import (
	"errors"
	"strings"
	"testing"
)

func TestSenderSendsDataOnlyAgainstCredit(t *testing.T) {
	s := NewSender(3, 2)
	for i := 0; i < 3; i++ {
		if !s.Push(true) {
			t.Fatalf("push %d refused below the limit", i)
		}
	}
	if s.Push(true) {
		t.Fatal("fourth data buffer accepted past the queue limit 3")
	}
	if !s.Full() {
		t.Fatal("Full() = false with 3 of 3 queued")
	}
	if !s.Push(false) {
		t.Fatal("event refused on a full queue")
	}
	check := func(step string, backlog, credit, queued int, sent uint64) {
		t.Helper()
		if s.Backlog() != backlog || s.Credit() != credit || s.Queued() != queued || s.Sent() != sent {
			t.Fatalf("%s: backlog %d credit %d queued %d sent %d, want %d %d %d %d",
				step, s.Backlog(), s.Credit(), s.Queued(), s.Sent(), backlog, credit, queued, sent)
		}
	}
	check("pushed", 3, 2, 4, 0)
	for i := 0; i < 2; i++ {
		if d, ok := s.Pop(); !d || !ok {
			t.Fatalf("pop %d = (%v, %v), want data", i, d, ok)
		}
	}
	check("two sent", 1, 0, 2, 2)
	if d, ok := s.Pop(); d || ok {
		t.Fatalf("pop without credit = (%v, %v), want (false, false)", d, ok)
	}
	// The event waits behind the uncredited data: frames stay in order.
	check("blocked", 1, 0, 2, 2)
	if err := s.AddCredit(2); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.Pop(); !d || !ok {
		t.Fatalf("pop after credit = (%v, %v), want data", d, ok)
	}
	if d, ok := s.Pop(); d || !ok {
		t.Fatalf("pop = (%v, %v), want the event", d, ok)
	}
	check("drained", 0, 1, 0, 4)
	if d, ok := s.Pop(); d || ok {
		t.Fatalf("pop of an empty queue = (%v, %v)", d, ok)
	}
}

func TestSenderEventsNeedNoCredit(t *testing.T) {
	s := NewSender(1, 0)
	for i := 0; i < 100; i++ { // past the ring's initial size, to grow it
		if !s.Push(false) {
			t.Fatalf("event %d refused", i)
		}
	}
	for i := 0; i < 100; i++ {
		if d, ok := s.Pop(); d || !ok {
			t.Fatalf("event %d: pop = (%v, %v)", i, d, ok)
		}
	}
	if s.Sent() != 100 || s.Credit() != 0 || s.Queued() != 0 {
		t.Fatalf("sent %d credit %d queued %d, want 100 0 0", s.Sent(), s.Credit(), s.Queued())
	}
}

func TestSenderAddCreditRejectsProtocolViolations(t *testing.T) {
	s := NewSender(4, 2)
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "add credit 0: credit must be positive"},
		{-1, "add credit -1: credit must be positive"},
		{1, "add credit 1: sender holds 2 of 2 credits"},
	} {
		err := s.AddCredit(tc.n)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, ErrViolation) {
			t.Fatalf("AddCredit(%d) = %v, want a violation %q", tc.n, err, tc.want)
		}
		if s.Credit() != 2 {
			t.Fatalf("credit %d after a refused AddCredit, want 2", s.Credit())
		}
	}
}

func TestNewSenderPanicsOnBadConfig(t *testing.T) {
	for _, c := range [][2]int{{0, 1}, {1, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("NewSender(%d, %d) did not panic", c[0], c[1])
				}
			}()
			NewSender(c[0], c[1])
		}()
	}
}

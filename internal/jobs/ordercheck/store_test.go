package ordercheck

import (
	"errors"
	"reflect"
	"testing"

	"github.com/weirstream/weir"
)

func TestStoreTransactions(t *testing.T) {
	s := NewStore()
	a := s.begin(0, 0)
	b := s.begin(1, 0)
	if err := s.write(a, []Record{{Src: 0, Seq: 0, Payload: newPayload(16, 0, 0)}, {Src: 0, Seq: 1, Payload: newPayload(16, 0, 7)}}, 16); err != nil {
		t.Fatal(err)
	}
	if err := s.commit(a); err == nil {
		t.Error("commit of a transaction never pre-committed succeeded")
	}
	if err := s.preCommit(a); err != nil {
		t.Fatal(err)
	}
	if err := s.write(a, []Record{{}}, 0); err == nil {
		t.Error("write into a pre-committed transaction succeeded")
	}
	if len(s.Committed()) != 0 {
		t.Errorf("pre-committed records are visible: %v", s.Committed())
	}
	for range 2 { // idempotent
		if err := s.commit(a); err != nil {
			t.Fatal(err)
		}
	}
	if want := seqs(0, 0, 0, 1); !reflect.DeepEqual(s.Committed(), want) {
		t.Errorf("committed %v, want %v", s.Committed(), want)
	}
	if s.Corrupt() != 1 || s.Written() != 2 {
		t.Errorf("corrupt=%d written=%d, want 1 and 2 (the second record carries seq 7's payload)", s.Corrupt(), s.Written())
	}
	if err := s.abort(a); !errors.Is(err, weir.ErrAlreadyCommitted) {
		t.Errorf("abort after commit: %v, want ErrAlreadyCommitted", err)
	}
	if err := s.commit(Txn{ID: 99}); !errors.Is(err, weir.ErrTransactionLost) {
		t.Errorf("commit of an unknown transaction: %v, want ErrTransactionLost", err)
	}
	// Subtask 1 restarts knowing only c: b is garbage and goes.
	c := s.begin(1, 1)
	s.cleanUp(1, []Txn{c})
	if s.Uncommitted() != 1 || s.Aborted() != 1 {
		t.Errorf("after clean-up: %d uncommitted, %d aborted, want 1 and 1", s.Uncommitted(), s.Aborted())
	}
	if err := s.write(b, []Record{{}}, 0); err == nil {
		t.Error("write into a cleaned-up transaction succeeded")
	}
	if err := s.abort(c); err != nil || s.Uncommitted() != 0 {
		t.Errorf("abort: %v, %d uncommitted", err, s.Uncommitted())
	}
}

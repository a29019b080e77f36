package cluster

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestLeaderStateIgnoresStaleObservation: the observer goroutine can
// deliver the previous leader after this JobManager's own term began; GET
// /overview must keep naming this JobManager and its term.
func TestLeaderStateIgnoresStaleObservation(t *testing.T) {
	self := LeaderInfo{ID: "jm-1", RPCAddress: "b:1", RESTAddress: "b:2"}
	s := newLeaderState(self, prometheus.NewRegistry())
	s.observed(LeaderInfo{ID: "jm-0", Term: 2})
	s.setLeading(3)
	s.observed(LeaderInfo{ID: "jm-0", Term: 2}) // late
	s.observed(LeaderInfo{})                    // etcd says none yet: also late
	r := s.rest()
	if !r.Leader || r.ID != "jm-1" || r.Term != 3 {
		t.Fatalf("after a stale observation: %+v, want jm-1 leading in term 3", r)
	}
	// A newer term is news even while leading: this term is over.
	s.observed(LeaderInfo{ID: "jm-2", Term: 5})
	if r := s.rest(); r.ID != "jm-2" || r.Term != 5 {
		t.Fatalf("after a newer term: %+v, want jm-2 in term 5", r)
	}
	s.setLeading(0)
	if r := s.rest(); r.Leader || r.ID != "jm-2" {
		t.Fatalf("after the term ended: %+v, want jm-2 named, not leading", r)
	}
}

package cluster

import "sync"

// fence is a TaskManager's memory of leader terms: the highest fencing
// token it has seen, in a Registered, a message or from LeaderTerms, for
// as long as RunTaskManager runs. A JobManager of an older term was
// deposed; its sessions are refused and its messages dropped.
type fence struct {
	mu      sync.Mutex
	highest uint64
	raised  chan struct{} // closed and replaced whenever highest rises
}

func newFence() *fence { return &fence{raised: make(chan struct{})} }

// raise records term and reports whether it is newer than every term seen.
func (f *fence) raise(term uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if term <= f.highest {
		return false
	}
	f.highest = term
	close(f.raised)
	f.raised = make(chan struct{})
	return true
}

// current returns the highest term seen and a channel closed when it
// rises.
func (f *fence) current() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest, f.raised
}

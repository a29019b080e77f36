package kafka

import "fmt"

// slotState is where one transactional id of a subtask's pool stands.
type slotState int8

const (
	// slotFree may begin a transaction.
	slotFree slotState = iota
	// slotOpen holds the transaction receiving writes.
	slotOpen
	// slotPending holds a pre-committed transaction awaiting its commit.
	slotPending
	// slotRestored holds a transaction of the restored checkpoint until
	// the operator commits or aborts it.
	slotRestored
	// slotHeld was committed; it rests until a checkpoint whose barrier
	// came after that commit completes. Until then a restore may commit
	// the same transaction again, and that must find the id untouched
	// (same producer epoch) to be answered "already committed" rather
	// than "fenced".
	slotHeld
)

// slot is one transactional id of the pool.
type slot struct {
	id    string
	state slotState
	// seq is the pre-commit number of the pending transaction; heldAt the
	// number of pre-commits done when a held slot was committed.
	seq, heldAt int
}

// pool is a subtask's transactional ids and what each holds. It is pure
// bookkeeping: the sink performs the broker calls.
type pool struct {
	slots []slot
	next  int // round-robin start of the next search
	// precommits counts pre-commits in this sink instance.
	precommits int
}

func newPool(prefix, uid string, subtask, size int) *pool {
	p := &pool{slots: make([]slot, size)}
	for k := range p.slots {
		p.slots[k].id = transactionalID(prefix, uid, subtask, k)
	}
	return p
}

// acquire returns a free slot, round-robin, and marks it open.
func (p *pool) acquire() (int, error) {
	for i := range p.slots {
		k := (p.next + i) % len(p.slots)
		if p.slots[k].state == slotFree {
			p.slots[k].state = slotOpen
			p.next = k + 1
			return k, nil
		}
	}
	counts := map[slotState]int{}
	for _, s := range p.slots {
		counts[s.state]++
	}
	return 0, fmt.Errorf("all %d transactional ids are in use (%d open, %d pre-committed awaiting a checkpoint, %d restored, %d committed and resting until a newer checkpoint completes): checkpoints are failing or not completing; raise kafka.WithPoolSize if that is expected", len(p.slots), counts[slotOpen], counts[slotPending], counts[slotRestored], counts[slotHeld])
}

// precommitted moves an open slot to pending; empty transactions need no
// commit and free the slot at once.
func (p *pool) precommitted(k int, empty bool) {
	p.precommits++
	if empty {
		p.slots[k].state = slotFree
		return
	}
	p.slots[k].state, p.slots[k].seq = slotPending, p.precommits
}

// committed records the commit of slot k's transaction. A pending slot's
// commit proves that the checkpoint of its pre-commit completed, which
// frees the slots committed before that pre-commit.
func (p *pool) committed(k int) {
	s := &p.slots[k]
	if s.state == slotPending {
		for i := range p.slots {
			if p.slots[i].state == slotHeld && p.slots[i].heldAt < s.seq {
				p.slots[i].state = slotFree
			}
		}
	}
	s.state, s.heldAt = slotHeld, p.precommits
}

// released frees slot k (its transaction was aborted).
func (p *pool) released(k int) { p.slots[k].state = slotFree }

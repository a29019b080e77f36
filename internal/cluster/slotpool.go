package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SlotRef names one physical slot: a TaskManager (its ResourceID) and the
// slot's index on it, 0 to the slots it offered - 1.
type SlotRef struct {
	TM   string
	Slot int
}

// String renders "tm-a#1".
func (r SlotRef) String() string { return fmt.Sprintf("%s#%d", r.TM, r.Slot) }

// JobSlots lists a job's logical slots, ascending.
type JobSlots struct {
	Job     string
	Logical []int
}

// TaskManagerSlots is one TaskManager's slot counts, for REST and logs.
type TaskManagerSlots struct {
	TM          string
	Total, Free int
}

// SlotPool is the ledger of physical slots offered by TaskManagers and the
// logical slots of jobs placed on them. With slot sharing, logical slot i of
// a job runs subtask i of every vertex, so a job of max parallelism P holds
// logical slots 0..P-1, each on one physical slot.
//
// A SlotPool is not safe for concurrent use.
type SlotPool struct {
	tms  []*tmSlots                 // registration order
	jobs map[string]map[int]SlotRef // job → logical slot → physical slot
	free int
}

type tmSlots struct {
	id    string
	slots []holder // by physical index; job == "" is free
	used  int
}

type holder struct {
	job     string
	logical int
}

// NewSlotPool returns an empty pool.
func NewSlotPool() *SlotPool {
	return &SlotPool{jobs: make(map[string]map[int]SlotRef)}
}

// Offer adds a TaskManager's n slots, placed after every TaskManager
// already registered. A TaskManager offers once per session: a returning
// one must have been reported Lost first.
func (p *SlotPool) Offer(tm string, n int) error {
	if tm == "" {
		return errors.New("offer slots: empty TaskManager ResourceID")
	}
	if n < 1 {
		return fmt.Errorf("TaskManager %s offers %d slots: start it with --slots 1 or more (taskmanager.numberOfTaskSlots)", tm, n)
	}
	if p.find(tm) >= 0 {
		return fmt.Errorf("TaskManager %s offered slots twice: it registers once per session, and a returning TaskManager is first reported lost", tm)
	}
	p.tms = append(p.tms, &tmSlots{id: tm, slots: make([]holder, n)})
	p.free += n
	return nil
}

// Lost removes a TaskManager and its slots and returns the logical slots of
// each job that were placed there, sorted by job: their tasks fail and are
// redeployed. An unknown TaskManager (already lost, by a closed stream and
// then a heartbeat timeout) returns nil.
func (p *SlotPool) Lost(tm string) []JobSlots {
	i := p.find(tm)
	if i < 0 {
		return nil
	}
	t := p.tms[i]
	p.tms = slices.Delete(p.tms, i, i+1)
	p.free -= len(t.slots) - t.used
	byJob := map[string][]int{}
	for _, h := range t.slots {
		if h.job != "" {
			byJob[h.job] = append(byJob[h.job], h.logical)
			delete(p.jobs[h.job], h.logical)
			if len(p.jobs[h.job]) == 0 {
				delete(p.jobs, h.job)
			}
		}
	}
	var out []JobSlots
	for job, logical := range byJob {
		slices.Sort(logical)
		out = append(out, JobSlots{Job: job, Logical: logical})
	}
	slices.SortFunc(out, func(a, b JobSlots) int { return cmp.Compare(a.Job, b.Job) })
	return out
}

// Allocate places the job's logical slots and returns where every one of
// them runs. A logical slot the job already holds keeps its place (regions
// of one job share logical slots); the others need free physical slots,
// and if there are too few nothing is allocated and ok is false.
//
// Each new logical slot, in ascending order, goes to the TaskManager with
// the lowest share of used slots, the earlier registered on a tie, and
// there to its lowest free slot: a job spreads evenly over the cluster.
// Allocate panics on a negative logical slot, a caller's bug.
func (p *SlotPool) Allocate(job string, logical []int) (map[int]SlotRef, bool) {
	need := p.missing(job, logical)
	if len(need) > p.free {
		return nil, false
	}
	held := p.jobs[job]
	if held == nil && len(need) > 0 {
		held = make(map[int]SlotRef)
		p.jobs[job] = held
	}
	for _, l := range need {
		t := p.leastUsed()
		s := slices.IndexFunc(t.slots, func(h holder) bool { return h.job == "" })
		t.slots[s] = holder{job: job, logical: l}
		t.used++
		p.free--
		held[l] = SlotRef{TM: t.id, Slot: s}
	}
	out := make(map[int]SlotRef, len(logical))
	for _, l := range logical {
		out[l] = held[l]
	}
	return out, true
}

// missing returns the logical slots of the list the job does not hold yet,
// ascending, without duplicates. It panics on a negative one.
func (p *SlotPool) missing(job string, logical []int) []int {
	held := p.jobs[job]
	var need []int
	for _, l := range logical {
		if l < 0 {
			panic(fmt.Sprintf("cluster: allocation of logical slot %d for job %s", l, job))
		}
		if _, ok := held[l]; !ok {
			need = append(need, l)
		}
	}
	slices.Sort(need)
	return slices.Compact(need)
}

// leastUsed returns the TaskManager with a free slot and the lowest share
// used/total, the earliest registered on a tie. There must be a free slot.
func (p *SlotPool) leastUsed() *tmSlots {
	var best *tmSlots
	for _, t := range p.tms {
		if t.used == len(t.slots) {
			continue
		}
		// t.used/len(t.slots) < best.used/len(best.slots), in integers.
		if best == nil || t.used*len(best.slots) < best.used*len(t.slots) {
			best = t
		}
	}
	return best
}

// Release frees every slot the job holds (it reached a terminal state).
func (p *SlotPool) Release(job string) {
	held := p.jobs[job]
	for _, r := range held {
		t := p.tms[p.find(r.TM)]
		t.slots[r.Slot] = holder{}
		t.used--
		p.free++
	}
	delete(p.jobs, job)
}

// Slots returns a copy of the job's placement: logical slot → physical.
func (p *SlotPool) Slots(job string) map[int]SlotRef {
	out := make(map[int]SlotRef, len(p.jobs[job]))
	for l, r := range p.jobs[job] {
		out[l] = r
	}
	return out
}

// Free returns the number of free slots.
func (p *SlotPool) Free() int { return p.free }

// Total returns the number of slots offered by TaskManagers not lost.
func (p *SlotPool) Total() int {
	n := 0
	for _, t := range p.tms {
		n += len(t.slots)
	}
	return n
}

// TaskManagers returns every TaskManager's slot counts in registration
// order.
func (p *SlotPool) TaskManagers() []TaskManagerSlots {
	out := make([]TaskManagerSlots, len(p.tms))
	for i, t := range p.tms {
		out[i] = TaskManagerSlots{TM: t.id, Total: len(t.slots), Free: len(t.slots) - t.used}
	}
	return out
}

func (p *SlotPool) find(tm string) int {
	return slices.IndexFunc(p.tms, func(t *tmSlots) bool { return t.id == tm })
}

// ErrNotEnoughSlots marks the failure of a job whose slots did not become
// free within slot.request.timeout. A restart cannot create slots, so it is
// unrecoverable.
var ErrNotEnoughSlots = errors.New("not enough slots")

// Shortage describes an allocation the pool cannot serve, for the message
// logged while the job waits and the error it fails with.
type Shortage struct {
	Job string
	// Need is the physical slots the job lacks, Free those free now on the
	// TaskManagers registered.
	Need, Free, TaskManagers int
}

// Shortage describes, after Allocate(job, logical) failed, how many slots
// the job still needs and what the pool has. Call it with Allocate's
// arguments.
func (p *SlotPool) Shortage(job string, logical []int) Shortage {
	return Shortage{Job: job, Need: len(p.missing(job, logical)), Free: p.free, TaskManagers: len(p.tms)}
}

// String renders "job demo needs 4 slots, 2 free on 1 TaskManager".
func (s Shortage) String() string {
	return fmt.Sprintf("job %s needs %s, %d free on %s", s.Job, plural(s.Need, "slot"), s.Free, plural(s.TaskManagers, "TaskManager"))
}

// Waiting renders the message logged every few seconds while the job
// waits at most timeout.
func (s Shortage) Waiting(timeout time.Duration) string {
	return fmt.Sprintf("%s: waiting up to %s (slot.request.timeout); start TaskManagers or give them more --slots", s, timeout)
}

// Err returns the error the job fails with after waiting timeout; it wraps
// ErrNotEnoughSlots.
func (s Shortage) Err(timeout time.Duration) error {
	return fmt.Errorf("%s after waiting %s (slot.request.timeout): start TaskManagers or give them more --slots: %w", s, timeout, ErrNotEnoughSlots)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

package heartbeat

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Monitor tracks when each peer was last seen and reports the peers silent
// for longer than its timeout. The zero value is not usable; use
// NewMonitor. A Monitor is not safe for concurrent use: one loop owns it.
//
// Peers are kept in a map and scanned by Expired and NextDeadline. A
// JobManager has tens to hundreds of TaskManagers and scans once per timer
// or heartbeat round, so a heap would buy nothing measurable.
type Monitor[P comparable] struct {
	timeout time.Duration
	peers   map[P]*entry
	order   uint64 // tie-break so expiry order never depends on map order
}

type entry struct {
	last  time.Time
	order uint64
}

// NewMonitor returns a Monitor that declares a peer lost once timeout has
// passed since it was last seen (heartbeat.timeout). It panics on a
// non-positive timeout, a configuration error Validate must catch first.
func NewMonitor[P comparable](timeout time.Duration) *Monitor[P] {
	if timeout <= 0 {
		panic(fmt.Sprintf("heartbeat: NewMonitor(%s): the timeout must be positive", timeout))
	}
	return &Monitor[P]{timeout: timeout, peers: make(map[P]*entry)}
}

// Seen records that peer p showed life at now, starting to track it if it
// was not. A time before the one already recorded is ignored: the
// deadline never moves back, so a late-delivered message cannot make a
// peer look lost.
func (m *Monitor[P]) Seen(p P, now time.Time) {
	e, ok := m.peers[p]
	if !ok {
		m.order++
		m.peers[p] = &entry{last: now, order: m.order}
		return
	}
	if now.After(e.last) {
		e.last = now
	}
}

// Expired returns the peers whose deadline (last seen + timeout) is at or
// before now, earliest deadline first (ties in the order they were first
// seen), and forgets them: each loss is reported once. A peer seen again
// afterwards is tracked as new; the caller decides whether it may return
// (a TaskManager does so by registering again).
func (m *Monitor[P]) Expired(now time.Time) []P {
	var lost []P
	for p, e := range m.peers {
		if !now.Before(e.last.Add(m.timeout)) {
			lost = append(lost, p)
		}
	}
	slices.SortFunc(lost, func(a, b P) int {
		ea, eb := m.peers[a], m.peers[b]
		if c := ea.last.Compare(eb.last); c != 0 {
			return c
		}
		return cmp.Compare(ea.order, eb.order)
	})
	for _, p := range lost {
		delete(m.peers, p)
	}
	return lost
}

// NextDeadline returns the earliest time at which Expired will report a
// peer, and false when no peer is tracked.
func (m *Monitor[P]) NextDeadline() (time.Time, bool) {
	var first time.Time
	found := false
	for _, e := range m.peers {
		if !found || e.last.Before(first) {
			first, found = e.last, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return first.Add(m.timeout), true
}

// Remove stops tracking p (its session closed, or it was released). It is
// a no-op for an unknown peer.
func (m *Monitor[P]) Remove(p P) { delete(m.peers, p) }

// Deadline returns p's deadline, and false when p is not tracked.
func (m *Monitor[P]) Deadline(p P) (time.Time, bool) {
	e, ok := m.peers[p]
	if !ok {
		return time.Time{}, false
	}
	return e.last.Add(m.timeout), true
}

// Len returns the number of peers tracked.
func (m *Monitor[P]) Len() int { return len(m.peers) }

// Timeout returns the timeout the Monitor was made with.
func (m *Monitor[P]) Timeout() time.Duration { return m.timeout }

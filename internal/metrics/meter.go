package metrics

import "time"

// meter turns the successive readings of a counter into a rate over a
// sliding window. It keeps a few readings, at most one per window/16, so
// frequent scrapes cost no memory; the rate runs from the oldest reading
// still inside the window (or just before it) to the newest.
//
// A counter belongs to one attempt of a task: after a restart it counts
// from zero again, so a change of attempt (or a counter that went down)
// starts the meter over instead of producing a negative rate.
type meter struct {
	window  time.Duration
	attempt int64
	samples []sample // oldest first
}

type sample struct {
	at time.Time
	n  int64
}

// observe records counter value n read at time at during the given
// attempt and returns the rate per second; ok is false until two readings
// of one attempt exist.
func (m *meter) observe(at time.Time, n, attempt int64) (rate float64, ok bool) {
	if len(m.samples) > 0 && (attempt != m.attempt || n < m.samples[len(m.samples)-1].n) {
		m.samples = m.samples[:0]
	}
	m.attempt = attempt
	if len(m.samples) == 0 || at.Sub(m.samples[len(m.samples)-1].at) >= m.window/16 {
		m.samples = append(m.samples, sample{at: at, n: n})
	}
	// Drop readings that a younger one, still old enough, replaces as the
	// window's start.
	drop := 0
	for drop+1 < len(m.samples) && !m.samples[drop+1].at.After(at.Add(-m.window)) {
		drop++
	}
	m.samples = append(m.samples[:0], m.samples[drop:]...)
	first := m.samples[0]
	dt := at.Sub(first.at)
	if dt <= 0 {
		return 0, false
	}
	return float64(n-first.n) / dt.Seconds(), true
}

// Package clocktest is a wall clock that tests can step, the way an
// administrator or NTP steps a machine's clock (fault class 14): the wall
// reading jumps, the monotonic reading does not.
//
// Go's time.Now carries both readings. Durations between two such values
// (Sub, Since, Until, Before, After, timers, tickers) use the monotonic one;
// anything that goes through UnixMilli, UnixNano, Round(0), Truncate,
// serialization or time.Unix uses the wall one. A Clock returns exactly what
// time.Now would return on a machine whose clock was stepped by the jumps
// made so far, so code fed by Clock.Now (a JobConfig.Now, a Dispatcher's Now)
// sees a jump only where it reads the wall clock. A test that injects one and
// jumps ±1 h mid-run therefore checks that every timeout, heartbeat, backoff
// and interval is measured on the monotonic clock, and that processing time
// (the wall clock in unix milliseconds) jumps as documented.
//
// Owns: the jumping clock. Must not touch: anything else.
package clocktest

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// Clock is time.Now with its wall reading moved by the sum of the jumps
// made so far. The zero value is a clock that has not jumped. It is safe
// for concurrent use.
type Clock struct {
	offset atomic.Int64 // nanoseconds added to the wall reading
	jumps  atomic.Int64
}

// New returns a clock that has not jumped. It panics if this Go's
// time.Time does not keep its readings where ShiftWall expects them.
func New() *Clock {
	checkLayout()
	return &Clock{}
}

// Now is time.Now after the jumps: the wall reading moved, the monotonic
// reading untouched.
func (c *Clock) Now() time.Time { return ShiftWall(time.Now(), time.Duration(c.offset.Load())) }

// Jump steps the wall clock by d (negative: back), as settimeofday would.
func (c *Clock) Jump(d time.Duration) {
	c.offset.Add(int64(d))
	c.jumps.Add(1)
}

// Offset returns the sum of the jumps made.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Jumps returns how many jumps were made.
func (c *Clock) Jumps() int { return int(c.jumps.Load()) }

// timeLayout mirrors time.Time's fields: wall holds the wall seconds and
// nanoseconds (and a flag saying ext is a monotonic reading), ext the
// monotonic reading. The layout has been stable since Go 1.9; checkLayout
// verifies it.
type timeLayout struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

const hasMonotonic = 1 << 63

// ShiftWall returns t with its wall reading moved by d and its monotonic
// reading, if it has one, unchanged. Without a monotonic reading it is
// t.Add(d).
func ShiftWall(t time.Time, d time.Duration) time.Time {
	s := t.Add(d) // moves both readings (or drops the monotonic one out of range)
	pt := (*timeLayout)(unsafe.Pointer(&t))
	ps := (*timeLayout)(unsafe.Pointer(&s))
	if pt.wall&hasMonotonic != 0 && ps.wall&hasMonotonic != 0 {
		ps.ext = pt.ext
	}
	return s
}

func checkLayout() {
	if unsafe.Sizeof(time.Time{}) != unsafe.Sizeof(timeLayout{}) {
		panic("clocktest: time.Time's layout changed; update timeLayout")
	}
	t := time.Now()
	s := ShiftWall(t, time.Hour)
	if s.Sub(t) != 0 || s.UnixNano()-t.UnixNano() != int64(time.Hour) || !s.Equal(t) {
		panic("clocktest: time.Time's layout changed; update timeLayout")
	}
}

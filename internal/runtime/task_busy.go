package runtime

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// busyClock splits a task's running time the way Flink's
// busyTimeMsPerSecond, idleTimeMsPerSecond and backPressuredTimeMsPerSecond
// do, the inputs an autoscaler needs: a subtask busy half its time at 1,000
// records/s could process 2,000.
//
//   - idle: waiting for input, a timer or mail (waitIdle), and a source's
//     Read that returned no record (it waited inside the connector);
//   - backpressured: waiting for output credit, either for the overdraft
//     to be repaid before the next batch (awaitOutput) or inside a send
//     (the writers' channels measure that: network.Sender's
//     BackpressureTime);
//   - busy: the rest of the time since the task started running.
//
// The task goroutine marks the start and the end of each wait (two clock
// reads per wait, nothing per record). A wait still going on counts up to
// the moment of the sample, so a task idle for minutes reads idle, not
// busy. Instants are offsets from the task's start on the monotonic clock:
// a step of the wall clock changes nothing.
type busyClock struct {
	base atomic.Pointer[time.Time] // when Run began; nil before
	// cumulative nanoseconds of finished waits, and 1 + the offset at
	// which the current wait began (0 when none: the zero busyClock is
	// ready to use)
	idle, waited         atomic.Int64
	idleFrom, waitedFrom atomic.Int64
	// senders returns the time the task's output channels waited inside
	// sends; nil without outputs.
	senders func() time.Duration

	mu         sync.Mutex
	prev, last busySample // samples bounding the rates' window; prev older
}

// busyWindow is the shortest window the per-second rates average over.
const busyWindow = time.Second

// busySample is the cumulative figures at one instant.
type busySample struct {
	at                 time.Duration // offset from base; 0: no sample
	busy, idle, bpTime time.Duration
}

// start sets the task's start; the task goroutine calls it once, first.
func (c *busyClock) start(now time.Time) { c.base.Store(&now) }

// offset is now as an offset from the start (0 before it).
func (c *busyClock) offset(now time.Time) time.Duration {
	b := c.base.Load()
	if b == nil {
		return 0
	}
	return now.Sub(*b)
}

// beginIdle and endIdle bracket an idle wait; beginWait and endWait a
// backpressured one. Task goroutine only.
func (c *busyClock) beginIdle(now time.Time) { c.idleFrom.Store(int64(c.offset(now)) + 1) }

func (c *busyClock) endIdle(now time.Time) { end(&c.idle, &c.idleFrom, c.offset(now)) }

func (c *busyClock) beginWait(now time.Time) { c.waitedFrom.Store(int64(c.offset(now)) + 1) }

func (c *busyClock) endWait(now time.Time) { end(&c.waited, &c.waitedFrom, c.offset(now)) }

// addIdle adds an idle period measured after the fact (an empty Read).
func (c *busyClock) addIdle(d time.Duration) {
	if d > 0 {
		c.idle.Add(int64(d))
	}
}

func end(sum, from *atomic.Int64, at time.Duration) {
	if f := from.Swap(0) - 1; f >= 0 && int64(at) > f {
		sum.Add(int64(at) - f)
	}
}

// running is the cumulative time of sum plus the part of a wait still
// going on at offset at. The sum is read before the start of the current
// wait, so a wait that ends in between is missed for this one sample
// rather than counted twice.
func running(sum, from *atomic.Int64, at time.Duration) time.Duration {
	d := time.Duration(sum.Load())
	if f := from.Load() - 1; f >= 0 && int64(at) > f {
		d += at - time.Duration(f)
	}
	return d
}

// sample returns the cumulative split at now.
func (c *busyClock) sample(now time.Time) busySample {
	at := c.offset(now)
	s := busySample{at: at}
	if at <= 0 {
		return s
	}
	s.idle = running(&c.idle, &c.idleFrom, at)
	s.bpTime = running(&c.waited, &c.waitedFrom, at)
	if c.senders != nil {
		s.bpTime += c.senders()
	}
	// The parts are measured apart from the total (a send's wait is
	// timed by its channel): clamp, so that busy never goes negative.
	s.idle = min(s.idle, at)
	s.bpTime = min(s.bpTime, at-s.idle)
	s.busy = at - s.idle - s.bpTime
	return s
}

// times returns the cumulative split at now and the rates over the window
// from the newest sample at least busyWindow older than now. Samples are
// kept at most one per busyWindow, so any number of readers calling at
// any pace see windows of one to two busyWindows (or the gap between
// their calls, if longer). Safe for concurrent readers.
func (c *busyClock) times(now time.Time) jobstatus.TaskTime {
	s := c.sample(now)
	bt := jobstatus.TaskTime{Busy: s.busy, Idle: s.idle, BackPressured: s.bpTime}
	if s.at <= 0 {
		return bt
	}
	c.mu.Lock()
	if c.last.at == 0 {
		c.last = s
	} else if s.at-c.last.at >= busyWindow {
		c.prev, c.last = c.last, s
	}
	base := c.prev
	c.mu.Unlock()
	span := s.at - base.at
	if base.at == 0 || span <= 0 {
		return bt
	}
	perSec := func(d time.Duration) int64 { return min(1000, max(0, int64(d)*1000/int64(span))) }
	bt.IdleMsPerSecond = perSec(s.idle - base.idle)
	bt.BackPressuredMsPerSecond = min(perSec(s.bpTime-base.bpTime), 1000-bt.IdleMsPerSecond)
	bt.BusyMsPerSecond = 1000 - bt.IdleMsPerSecond - bt.BackPressuredMsPerSecond
	return bt
}

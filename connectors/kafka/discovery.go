package kafka

import (
	"context"
	"sync"
	"time"
)

// discovered is the outcome of one partition discovery: the partition
// count seen and the earliest offset of each partition new to the subtask.
type discovered struct {
	known int32 // the count the discovery started from
	n     int32
	start map[int32]int64
	err   error
}

// discoverer runs at most one partition discovery at a time, in the
// background, every interval; Read collects the outcome without waiting.
type discoverer struct {
	every   time.Duration
	run     func(ctx context.Context, known int32) discovered
	next    time.Time
	running bool
	out     chan discovered // capacity 1: the goroutine never blocks
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// newDiscoverer returns a discoverer whose first discovery is due one
// interval after now; run performs one, from the partition count known.
// ctx is the source task's: discoveries end with the task at the latest.
func newDiscoverer(ctx context.Context, every time.Duration, now time.Time, run func(ctx context.Context, known int32) discovered) *discoverer {
	ctx, cancel := context.WithCancel(ctx)
	return &discoverer{every: every, run: run, next: now.Add(every), out: make(chan discovered, 1), ctx: ctx, cancel: cancel}
}

// poll returns the outcome of a finished discovery, if any, and starts the
// next one, from the partition count known, when it is due and none is
// running.
func (d *discoverer) poll(now time.Time, known int32) (discovered, bool) {
	if d.running {
		select {
		case r := <-d.out:
			d.running = false
			return r, true
		default:
			return discovered{}, false
		}
	}
	if now.Before(d.next) {
		return discovered{}, false
	}
	d.running, d.next = true, now.Add(d.every)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.out <- d.run(d.ctx, known)
	}()
	return discovered{}, false
}

// stop cancels a running discovery and waits for its goroutine.
func (d *discoverer) stop() {
	d.cancel()
	d.wg.Wait()
}

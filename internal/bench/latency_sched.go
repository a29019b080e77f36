package bench

// Where a record's latency goes when the machine is busy: waiting for a
// CPU. Two witnesses, read around each measured run: Go's scheduler
// latency histogram (a goroutine runnable until it runs: a task woken by
// a batch waits that long before it can take it) and the kernel's run
// queue delay of the process's threads (runnable, but another process
// had the core).

import (
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

const schedLatencies = "/sched/latencies:seconds"

// schedSnapshot is the cumulative figures at one moment.
type schedSnapshot struct {
	counts     []uint64  // Go scheduler latencies, by bucket
	buckets    []float64 // their boundaries in seconds
	runDelayNs int64     // the threads' total run queue delay
}

func takeSchedSnapshot() schedSnapshot {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	var snap schedSnapshot
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[0].Value.Float64Histogram()
		snap.counts, snap.buckets = append([]uint64(nil), h.Counts...), h.Buckets
	}
	snap.runDelayNs = threadsRunDelay()
	return snap
}

// schedQuantile is the q-quantile of the scheduler latencies between a and
// b, in milliseconds: the upper boundary of the bucket holding it (the
// runtime's buckets are a few per power of two). 0 without samples.
func schedQuantile(a, b schedSnapshot, q float64) float64 {
	if len(a.counts) != len(b.counts) || len(b.counts) == 0 {
		return 0
	}
	var total uint64
	for i := range b.counts {
		total += b.counts[i] - a.counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(total))), 1)
	var seen uint64
	for i := range b.counts {
		if seen += b.counts[i] - a.counts[i]; seen >= rank {
			up := b.buckets[i+1]
			if math.IsInf(up, 1) {
				up = b.buckets[i]
			}
			return up * 1e3
		}
	}
	return 0
}

// threadsRunDelay sums the run queue delay (ns, the second field of
// /proc/self/task/*/schedstat) of the process's threads; 0 where Linux's
// schedstat is missing.
func threadsRunDelay() int64 {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		if fs := strings.Fields(string(b)); len(fs) >= 2 {
			if v, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// wakeProbe sleeps 1 ms over and over while a run lasts and counts by how
// much each sleep overshoots: the delay a task parked on an empty gate or
// a source waiting for its next chunk sees on top of its own, from Go's
// timers and the kernel waking the thread. It is the witness Go's
// scheduler latency lacks when the whole process waits for a core.
type wakeProbe struct {
	over latencyHist
	stop chan struct{}
	done chan struct{}
}

func startWakeProbe() *wakeProbe {
	p := &wakeProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		const nap = time.Millisecond
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(nap)
			p.over.record(int64(time.Since(t0) - nap))
		}
	}()
	return p
}

// finish stops the probe and returns its overshoots.
func (p *wakeProbe) finish() *latencyHist {
	close(p.stop)
	<-p.done
	return &p.over
}

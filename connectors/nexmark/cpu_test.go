//go:build unix

package nexmark

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock measures the process's CPU time, so that a benchmark on a busy
// machine reports its cost rather than its wall-clock time.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// report adds cpu-ns/op: the process's CPU time over b.N.
func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
}

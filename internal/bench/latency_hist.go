package bench

import (
	"math"
	"math/bits"
)

// latencyHist counts durations in nanoseconds in log-linear buckets, as
// HdrHistogram does with two significant digits: values below 256 ns each
// have their own bucket, and every power of two above is split into 128
// equal buckets, so a bucket is at most 1/128 (0.8 %) of its values wide.
//
// Why a histogram and not sorted samples: the benches record every record
// (tens of millions per run) on the sink's hot path. Counting is one index
// computation and one increment, no allocation, constant memory (58 KiB
// per histogram), and two subtasks' histograms merge by adding counters;
// a p999 from a bounded reservoir would rest on a few hundred samples,
// and sorting all samples would cost memory proportional to the run.
type latencyHist struct {
	counts [histBuckets]uint64
	total  uint64
	max    int64
}

const (
	histSubBits = 7 // 128 buckets per power of two
	histSub     = 1 << histSubBits
	// Values below 2*histSub are exact; each larger power of two (shift 1
	// to 55 of an int64) has histSub buckets.
	histBuckets = 2*histSub + (63-histSubBits-1)*histSub
)

// histIndex is the bucket of v (v >= 0).
func histIndex(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1 // v>>shift is in [histSub, 2*histSub)
	return 2*histSub + (shift-1)*histSub + int(v>>shift) - histSub
}

// histUpper is the largest value of bucket i.
func histUpper(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := (i-2*histSub)/histSub + 1
	top := int64((i-2*histSub)%histSub + histSub)
	return (top+1)<<shift - 1
}

// record counts one duration; negative ones (a clock read out of order
// across goroutines cannot produce them with the monotonic clock, but a
// caller's arithmetic could) count as 0.
func (h *latencyHist) record(ns int64) { h.recordN(ns, 1) }

// recordN counts n durations of ns.
func (h *latencyHist) recordN(ns int64, n uint64) {
	ns = max(ns, 0)
	h.counts[histIndex(ns)] += n
	h.total += n
	h.max = max(h.max, ns)
}

// merge adds o's counts to h.
func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// quantile is the value at or below which a fraction q of the counted
// durations lie: the largest value of the bucket holding the
// ceil(q*total)-th smallest, but never above the largest duration counted.
// So it never understates a percentile, and overstates it by at most a
// bucket's width (0.8 %). 0 for an empty histogram.
func (h *latencyHist) quantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// quantileMs is quantile in milliseconds.
func (h *latencyHist) quantileMs(q float64) float64 { return float64(h.quantile(q)) / 1e6 }

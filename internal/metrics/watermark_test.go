package metrics_test

import (
	"math"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// No watermark yet is Flink's Long.MIN_VALUE as a double; the lag is
// left out before the first watermark and after the end of input.
func TestWatermarkLag(t *testing.T) {
	if v := metrics.WatermarkValue(math.MinInt64); v != -9.223372036854776e+18 {
		t.Errorf("no watermark exports %v, want -9.223372036854776e+18", v)
	}
	now := time.UnixMilli(10_000)
	for _, tc := range []struct {
		wm   int64
		lag  float64
		isOK bool
	}{
		{math.MinInt64, 0, false},
		{math.MaxInt64, 0, false},
		{7_500, 2_500, true},
		{12_000, -2_000, true}, // event time ahead of the clock
	} {
		if lag, ok := metrics.WatermarkLag(now, tc.wm); lag != tc.lag || ok != tc.isOK {
			t.Errorf("WatermarkLag(%d) = %v, %v; want %v, %v", tc.wm, lag, ok, tc.lag, tc.isOK)
		}
	}
}

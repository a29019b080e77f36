package metrics

import (
	"math"
	"time"
)

// Watermark metrics. Flink's gauges hold the watermark as a Java long of
// milliseconds and show Long.MIN_VALUE until the first one; its Prometheus
// reporter turns that into the double -9.223372036854776e+18, and so does
// weir (math.MinInt64 as a float64), so alerts written for Flink's "no
// watermark yet" value keep working. A bounded input's end sends the
// largest watermark (math.MaxInt64), exported as 9.223372036854776e+18.

// WatermarkValue is the gauge value of a watermark in milliseconds:
// watermark.MinWatermark (none yet) is math.MinInt64, as Flink's
// Long.MIN_VALUE.
func WatermarkValue(ms int64) float64 { return float64(ms) }

// WatermarkLag is Flink's watermarkLag (FLIP-33): the processing time now
// minus the task's current output watermark, in milliseconds. ok is false
// while the task has sent no watermark, and after it sent the end of its
// input (math.MaxInt64): no lag means anything then, so the series is left
// out, as Flink registers the gauge only once a watermark exists.
func WatermarkLag(now time.Time, outputWatermark int64) (ms float64, ok bool) {
	if outputWatermark == math.MinInt64 || outputWatermark == math.MaxInt64 {
		return 0, false
	}
	return float64(now.UnixMilli() - outputWatermark), true
}

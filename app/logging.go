package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/logagg"
)

// logAggregateWindow is the window in which a process's repeated
// warnings become one line and one summary (internal/logagg). It is a
// constant, not a configuration key: an operator needs the count and the
// newest occurrence, not a choice of window.
const logAggregateWindow = logagg.DefaultWindow

// logFlushEvery is how often a process checks for windows that ended
// while nothing else was logged.
const logFlushEvery = time.Second

// aggregated returns a logger writing through h with repeated warnings
// aggregated, and end, which writes the pending summaries and stops the
// flushing goroutine: call it when the process (or the run) is done. end
// may be called more than once.
func aggregated(h slog.Handler) (log *slog.Logger, end func()) {
	agg := logagg.New(h, logagg.Options{Window: logAggregateWindow})
	stop := agg.FlushEvery(logFlushEvery)
	var once sync.Once
	return slog.New(agg), func() {
		once.Do(func() {
			stop()
			_ = agg.FlushAll(context.Background())
		})
	}
}

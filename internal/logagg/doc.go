// Package logagg aggregates repeated log records: a slog.Handler that
// every weir process installs in front of its text handler, so that a
// failure spiral (a checkpoint declined with "no space left on device"
// every 200 ms, for minutes) reads as a few lines, not thousands.
//
// The rules, for an operator reading the log during a failure:
//
//   - Records below the aggregation level (WARN by default) pass through
//     unchanged: progress lines such as msg="checkpoint completed" are
//     never held back or counted.
//
//   - A record at WARN or above belongs to a group; see [Handler] for the
//     key. The first record of a group goes out at once, unchanged, and
//     opens the group's window (30 s by default).
//
//   - Later records of the group within the window are counted, not
//     printed. Once the window has ended, one summary record goes out: the
//     group's level, its message with " (repeated N times in the last
//     30s)" appended, the attributes repeated=N and window=30s, then the
//     attributes of the last counted record (the newest checkpoint id):
//
//     level=WARN msg="declining checkpoint: asynchronous snapshot failed (repeated 312 times in the last 30s)" repeated=312 window=30s checkpoint=318 err="…: no space left on device"
//
//     The next record of the group after that opens a new window and goes
//     out at once again.
//
//   - The end of a window is noticed by the next record of any group or
//     level handled, by [Handler.Flush] (which [Handler.FlushEvery] calls
//     from one stoppable goroutine), and at the end of the process by
//     [Handler.FlushAll], which writes every pending summary.
//
// Walkthrough:
//
//	agg := logagg.New(slog.NewTextHandler(os.Stderr, nil), logagg.Options{})
//	stop := agg.FlushEvery(time.Second)
//	defer func() { stop(); agg.FlushAll(context.Background()) }()
//	log := slog.New(agg)
//	for id := range 10_000 {
//		log.Warn("checkpoint declined", "checkpoint", id, "reason", "no space left on device")
//	}
//	// one line now, one summary (repeated=9999) when the window ends.
package logagg

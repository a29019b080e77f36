// Package window holds the rules of windowing (issue 12): which windows a
// record belongs to, how session windows merge, when a window fires, when
// it is late and when its state goes. It is a pure core: the window
// operator in the root package stores window contents, trigger state,
// merging sets and timers in the keyed state backend and performs what
// this package decides, so windows survive failures and rescale.
//
// The operator's algorithm per record (key k, timestamp ts, watermark wm):
//
//	ws, err := rules.Assigner().AppendWindows(buf[:0], ts) // err: report the record
//	added := false
//	for _, w := range ws {
//		sw := w // the state window: whose namespace holds w's contents
//		if rules.Assigner().Merging() {
//			m := set.Add(w) // set: k's MergingSet, decoded from keyed state
//			// merge the contents and counts of m.StateWindows into
//			// m.StateWindow, delete them; delete rules.Timers(x) for x in m.Windows
//			w, sw = m.Result, m.StateWindow
//		}
//		d := rules.OnElement(w, count(k, sw), wm)
//		if d.Skip { set.Remove(w) (merging); continue }
//		added = true
//		// add the record to sw's contents, then perform d (Decision)
//	}
//	if !added && rules.IsElementLate(ts, wm) { side output; numLateRecordsDropped++ }
//
// and per timer t of key k and window w (event-time timers fire in order
// of time once the watermark reaches them, before the watermark is
// forwarded): for a merging assigner sw is set.StateWindow(w) (none: a
// stale timer, ignore), else w; then perform rules.OnTimer(w, t, count).
// For processing-time windows ts is the current processing time. The
// merging set goes back to keyed state after each record and timer. A
// merged session is never late (its cleanup time is at least that of the
// held windows it absorbed, whose cleanup timers have not fired), so Skip
// after a merge drops no merged state. The test file sim_test.go is this
// algorithm in full, over maps.
//
// The rules are Flink's: tumbling starts are ts − ((ts − offset) mod size)
// with a non-negative modulo; sliding windows are all [s, s+size) with
// s ≡ offset (mod slide) holding ts; session windows [ts, ts+gap) merge
// when they overlap or touch, keeping a stable state window; a window is
// late when MaxTimestamp + allowed lateness ≤ watermark; the event-time
// trigger fires at MaxTimestamp and again for each element within
// lateness; the cleanup timer at MaxTimestamp + lateness clears the state;
// global windows fire only by count. End of input is the watermark
// math.MaxInt64, which fires every event-time window.
//
// Owns: these rules and the encoding of a MergingSet. Must not touch:
// state, timers, clocks, records or goroutines (checked by internal/archtest).
package window

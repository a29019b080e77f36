// Package asyncqueue is the pure core of weir's async I/O operator
// (weir.AsyncMap): the queue of a subtask's in-flight calls, as a state
// machine. It decides when a completed call's result may go downstream
// and when a watermark may follow; it owns no goroutines, clocks or
// channels. The operator runs the calls and feeds their completions in.
//
// Events in: Add (a record enters, with its sequence number and key),
// Complete (its call finished), Watermark (event time advanced). Output:
// Drain appends what may be emitted now, in emission order: results
// (Out.Result) and watermarks (Out.Watermark).
//
//	q := asyncqueue.New[Req, Resp](asyncqueue.Unordered, 1000)
//	if q.Full() { /* wait for a completion: backpressure */ }
//	q.Add(seq, key, req)
//	... q.Complete(seq, resp) ...
//	for _, o := range q.Drain(buf[:0]) { emit(o) }
//
// Modes (Flink's AsyncDataStream.orderedWait / unorderedWait, plus one):
//
//   - Ordered: results leave in input order.
//   - Unordered: a result leaves as soon as it completes, but never
//     overtakes a watermark: watermarks are fences. Everything added
//     before a watermark leaves before it, everything after it leaves
//     after it, so event time stays correct downstream.
//   - OrderedPerKey: results of one key leave in input order, different
//     keys are free; watermarks are fences as in Unordered.
//
// In every mode a watermark leaves only once every record added before it
// has left. Consecutive watermarks with no record between them collapse
// into the latest, so the queue holds at most capacity records and
// capacity+1 watermarks.
//
// Exactly-once: Snapshot returns the records still in the queue (in flight
// or completed but not yet emitted) in input order; the operator stores
// them in its checkpoint and, after a restore, adds them again (Restore)
// and re-issues their calls with the same sequence numbers, so a service
// can deduplicate by them. Watermarks are not part of the snapshot: the
// restored upstream sends them again, after the re-added records.
//
// Owns: the order of an async operator's output. Must not touch: IO,
// goroutines, clocks (checked by internal/archtest).
package asyncqueue

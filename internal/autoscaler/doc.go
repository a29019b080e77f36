// Package autoscaler decides each vertex's parallelism from what the job
// measures: records in and out per second, the busy and backpressured
// fraction of each subtask's time, and a source's lag. It is a pure core:
// observations and time go in, a Decision with every input behind it
// comes out; the JobMaster's driver feeds it from task metrics and
// carries a decision out as an in-place rescale.
//
// # The rule
//
// A vertex's true processing rate per subtask is what it would process if
// it never waited: records in per second per subtask ÷ busy fraction (a
// subtask busy 50 % of the time at 1,000 records/s could do 2,000). The
// rate a vertex must sustain (its target) starts at the sources: the rate
// records arrive (what a source reads plus the growth of its lag) plus
// its lag spread over the catch-up time. Downstream, a vertex's target is
// its input rate scaled by how much its upstream vertices' targets exceed
// their current output. The parallelism wanted is the target over the
// true rate per subtask at the target utilization, rounded up.
//
// What keeps it from doing harm:
//
//   - No decision while a vertex's utilization at its current parallelism
//     (target ÷ capacity) is within target ± boundary: small swings of the
//     load change nothing (no flapping).
//   - A vertex that is busy at or above the target utilization, or
//     backpressured more than the limit, is never scaled down: a
//     backpressured vertex waits for downstream, so its busy time
//     understates what it would do unblocked. A vertex scales down at
//     most once per scale-down interval, and by at most the max
//     scale-down factor per decision.
//   - Observations count only after the stabilization time that follows
//     a start or a rescale (rates right after a restart are catch-up, not
//     load), and only once they cover half the metrics window.
//   - Parallelism stays within each vertex's min and max (max is the key
//     groups' count for a keyed vertex: no more subtasks than key groups),
//     and a keyed vertex's parallelism is rounded up to one that divides
//     its key groups evenly where one exists below its max.
//   - With slot sharing a job needs as many slots as its largest vertex:
//     no vertex is given more than the slots there are.
//
// The configuration keys (job.autoscaler.*) are Flink's autoscaler's,
// whose semantics this follows; the computation is weir's own.
//
// Owns: the decision rule. Must not touch: metrics collection, the
// clock, deployment (the driver's).
package autoscaler

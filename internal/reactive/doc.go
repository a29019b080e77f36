// Package reactive decides the parallelism of a job in reactive mode
// (scheduler-mode: reactive, docs/rescaling.md "Reactive mode"): the job
// uses every slot of the cluster, grows when TaskManagers join and, when
// slots it ran on are lost for longer than the wait timeout, shrinks to
// the slots that remain and goes on instead of waiting for them.
//
// It is a pure core, in the shape of internal/jobmaster: Machine.Step
// takes the time and an event (the slots changed, a clock tick, a run of
// the job started at some parallelism, a rescale failed) and returns
// actions (rescale to P; a note of what the rule now waits for). The
// JobManager's driver (internal/cluster/reactive.go) feeds it from
// TaskManager registrations and losses and carries a rescale out.
//
// # The rule
//
// The job's parallelism P is the parallelism of every operator the
// program did not pin (Stream.Parallelism(n) pins an operator: it keeps
// n, which makes n the least number of slots the job needs, since with
// slot sharing a job needs as many slots as its largest vertex). The
// parallelism wanted is min(slots, max), where max is the smallest max
// parallelism (key-group count) of the unpinned operators.
//
//   - Scale up: when the wanted parallelism exceeds P by at least
//     min-parallelism-increase and the slots have not grown for the
//     stabilization timeout (resource-stabilization-timeout), so that
//     several TaskManagers joining at once give one rescale.
//   - Scale down: when the slots are fewer than the job needs (P, or its
//     largest pinned operator) and have been for the wait timeout
//     (resource-wait-timeout); slots that come back within it change
//     nothing. A job whose pinned operators need more slots than there
//     are cannot run at any parallelism: it is not rescaled, and waits
//     for slots as any job does (slot.request.timeout).
//   - One rescale at a time: nothing is decided while one is in
//     progress (until a run at the new parallelism starts, or the rescale
//     fails). A failed rescale is tried again after the retry delay.
//
// Owns: the decision rule. Must not touch: the slot pool, the clock,
// deployment, logging (the driver's).
package reactive

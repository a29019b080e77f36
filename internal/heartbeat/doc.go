// Package heartbeat decides when a silent peer is lost. It is the timing of
// the cluster's heartbeats (docs/design/cluster.md, section 2) and nothing
// else: a Monitor takes "peer seen at t" and "it is now t" and answers
// which peers have been silent for the timeout and when to look next. It
// reads no clock, starts no goroutine and sends nothing; the JobManager's
// session loop and the TaskManager's registration loop feed it the times
// they observe and arm one timer at NextDeadline.
//
// Both sides use one: the JobManager monitors every TaskManager (seen when
// a Heartbeat answer arrives), a TaskManager monitors its JobManager (seen
// when a HeartbeatRequest arrives). A broken stream is noticed by the
// transport; the Monitor covers the peer that stays connected but silent
// (stopped, swapping, partitioned).
//
//	m := heartbeat.NewMonitor[string](50 * time.Second)
//	m.Seen("tm-1", t0)           // registered
//	m.Seen("tm-1", t0.Add(10*time.Second))
//	at, ok := m.NextDeadline()   // t0+60s: arm the timer
//	lost := m.Expired(t0.Add(60 * time.Second)) // ["tm-1"], now forgotten
//
// Owns: the timing of heartbeats. Must not touch: sockets, goroutines or
// the clock (checked by internal/archtest).
package heartbeat

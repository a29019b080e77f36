// Package role holds a JobManager's role under high availability as a
// pure state machine: when it stands by, campaigns, serves a term, steps
// down and resigns. It does no IO and starts no goroutine; internal/cluster
// (runHAJobManager) is its driver: it performs the actions — serving the
// standby rpc server, a campaign in etcd, a term's Dispatcher and
// JobMasters, a resignation, a retry timer — and feeds their results back
// as events, in the manner of etcd raft's Step.
//
// # Events in, actions out
//
//	m := role.New(role.Config{MinBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second})
//	m.Step(role.Start{})                 // ServeStandby, Campaign
//	m.Step(role.Elected{Term: 7})        // StopStandby, ServeTerm{7}
//	m.Step(role.LeaseLost{Term: 7})      // StopTerm{7, Lost}
//	m.Step(role.TermStopped{Term: 7})    // Resign{7}, ServeStandby, Campaign
//	m.Step(role.CampaignFailed{})        // RetryAfter{200ms}
//	m.Step(role.RetryDue{})              // Campaign
//	m.Step(role.Shutdown{})              // StopStandby, CancelCampaign, Stopped
//
// # The rules
//
//   - At most one campaign is in flight, and never while a term is served:
//     a JobManager leads at most one term at a time.
//   - The standby server and a term never serve the rpc port together: the
//     standby stops before the term serves, and serves again only once the
//     term has stopped (its Dispatcher released the port's view).
//   - A term ends only through StopTerm, and the next campaign starts only
//     once it stopped (TermStopped): its jobs are suspended first, so the
//     next leader never recovers a job this process still runs.
//   - The stopped term is resigned (its election key deleted at once, so a
//     standby takes over without waiting out the lease; a no-op when the
//     lease is gone).
//   - A term that stops by itself (TermStopped while leading: it failed
//     to serve) is resigned, and the JobManager stands by again.
//   - A lost lease (LeaseLost) of a term that is not the served one is
//     stale and ignored; an Elected that arrives after Shutdown is resigned
//     at once and not served.
//   - A failed campaign (etcd away) retries after a backoff that doubles
//     from MinBackoff to MaxBackoff and starts again after an election.
//   - Shutdown stops the term (its jobs stay recorded as running, for the
//     next leader), resigns it and ends with Stopped; during a campaign it
//     cancels the campaign and ends once the campaign returned.
//
// The scripts in testdata show each rule; TestRandom drives the machine
// through seeded random interleavings against the invariants above.
//
// # Owns and must not touch
//
// Owns: the order of a JobManager's role changes. Must not touch: etcd,
// sockets, goroutines or the clock (the retry delay is an action the driver
// times); internal/archtest keeps it pure.
package role

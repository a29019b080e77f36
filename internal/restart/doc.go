// Package restart holds the restart strategies that decide, after a job
// failure, whether the job restarts and how long it waits first. They are
// Flink's: none, fixed-delay, exponential-delay and failure-rate, configured
// with Flink's restart-strategy.* keys.
//
// Strategies are pure: the caller passes the failure time in and gets a
// Decision out; no strategy reads a clock, sleeps or draws randomness it was
// not given, so tests replay exact delays with a fake clock and a seeded
// *rand.Rand.
//
// Walkthrough (the JobManager's failover loop):
//
//	s, err := restart.FromConfig(cfg, rand.New(rand.NewPCG(seed, 0)))
//	...
//	// a task failed at time now:
//	d := s.OnFailure(now)
//	if !d.Restart {
//		return fmt.Errorf("job failed: %s: %w", d.Reason, cause)
//	}
//	// arm a timer for d.Delay, then redeploy from the latest checkpoint.
//
// OnFailure is called once per job failure (not once per failed task of the
// same failover); a strategy that has refused a restart keeps refusing, since
// the job is then terminally failed.
//
// Owns: the restart strategies and their configuration. Must not touch: the
// failover handler's regions or any clock (checked by internal/archtest).
package restart

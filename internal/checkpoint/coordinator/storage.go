package coordinator

import (
	"fmt"
	"time"
)

// storageState is the coordinator's view of failing checkpoint storage.
//
// The rules prevent a failure spiral: a job whose storage fails would
// otherwise fail a checkpoint, count it, restart, re-read its input and
// fail the next checkpoint the same way, again and again
// (docs/guarantees.md, "Checkpoint storage failing").
//
//   - A storage failure (CauseStorage) fails its checkpoint but is not
//     counted towards tolerable-failed-checkpoints and never asks for a
//     failover: a restart cannot fix storage, and restarting re-reads the
//     input to get nowhere. The job keeps running; its two-phase-commit
//     sinks keep their transactions open until a checkpoint completes.
//   - While storage fails, the next checkpoint waits a backoff after the
//     last failure: the interval, doubling up to StorageMaxBackoff.
//   - Each interval the driver probes storage with a small write
//     (ProbeStorage). A probe that succeeds after one that failed means
//     storage came back: the next checkpoint is due at once, so a
//     recovery is seen within one interval whatever the backoff. (A probe
//     that keeps succeeding while checkpoints keep failing — room for a
//     small file, not a checkpoint — lets the backoff rule.)
//   - An alert (StorageAlert) goes out at the first failure, then at most
//     once per AlertEvery with the count since the last one.
//   - A completed checkpoint ends it (StorageRecovered) and resets the
//     backoff.
//   - The job fails for good (FailJob), naming the cause, once storage has
//     failed for StorageFailureTimeout, or earlier when the oldest open
//     transaction of a two-phase-commit sink (begun at the barrier of the
//     last completed checkpoint) would outlive TransactionTimeout before
//     the next attempt.
type storageState struct {
	failing  bool
	since    time.Time
	failures int
	backoff  time.Duration
	// retryAt is the earliest next trigger while failing.
	retryAt time.Time
	// probeFailed: a probe failed since the last checkpoint attempt
	// failed; probing: one is in flight; nextProbe: when the next is due.
	probeFailed bool
	probing     bool
	nextProbe   time.Time
	lastAlert   time.Time
	recent      int
	reason      string
	// gaveUp: FailJob was emitted.
	gaveUp bool
}

// storageFailed records a checkpoint failed by storage and emits the
// alert, or the job's failure when a bound is passed.
func (c *Coordinator) storageFailed(reason string) {
	s := &c.storage
	if !s.failing {
		*s = storageState{failing: true, since: c.now, backoff: c.cfg.Interval}
		if s.backoff <= 0 {
			s.backoff = time.Second
		}
		s.nextProbe = c.now.Add(c.probeEvery())
	} else {
		s.backoff = min(2*s.backoff, max(c.cfg.StorageMaxBackoff, c.cfg.Interval))
	}
	s.failures++
	s.recent++
	s.reason = reason
	s.retryAt = c.now.Add(s.backoff)
	s.probeFailed = false
	if s.gaveUp {
		return
	}
	failingFor := c.now.Sub(s.since)
	if c.storageTimedOut() {
		return
	}
	// The next attempt must not only start but complete (and its sinks
	// commit) before the oldest open transaction outlives its timeout:
	// an attempt begun just inside it and completed after it would commit
	// transactions the broker may have aborted, a loss (loud, but a loss).
	// An attempt completes within the checkpoint timeout or fails.
	if t := c.cfg.TransactionTimeout; t > 0 && s.retryAt.Add(c.cfg.Timeout).Sub(c.openSince) >= t {
		s.gaveUp = true
		c.emit(FailJob{Reason: fmt.Sprintf("checkpoint storage has failed for %v (%d checkpoints) and no checkpoint completed for %v: the two-phase-commit sinks' open transactions would outlive their transaction timeout of %v before the next attempt could complete (within execution.checkpointing.timeout), and be aborted by their system; failing the job now rather than losing output; last: %s",
			roundDuration(failingFor), s.failures, roundDuration(c.now.Sub(c.openSince)), t, reason)})
		return
	}
	if s.lastAlert.IsZero() || c.now.Sub(s.lastAlert) >= c.cfg.AlertEvery {
		var giveUp time.Duration
		if t := c.cfg.StorageFailureTimeout; t > 0 {
			giveUp = t - failingFor
		}
		c.emit(StorageAlert{Reason: reason, Since: s.since, Failures: s.failures, Recent: s.recent, NextRetry: s.backoff, GiveUpIn: giveUp})
		s.lastAlert, s.recent = c.now, 0
	}
}

// storageTimedOut fails the job once storage has failed for
// StorageFailureTimeout: at a failure, or at the first Tick past the
// bound (a checkpoint backing off may not fail again before it).
func (c *Coordinator) storageTimedOut() bool {
	s := &c.storage
	t := c.cfg.StorageFailureTimeout
	if !s.failing || s.gaveUp || t <= 0 {
		return s.gaveUp
	}
	failingFor := c.now.Sub(s.since)
	if failingFor < t {
		return false
	}
	s.gaveUp = true
	c.emit(FailJob{Reason: fmt.Sprintf("checkpoint storage has failed for %v (%d checkpoints; execution.checkpointing.storage-failure-timeout is %v); last: %s",
		roundDuration(failingFor), s.failures, t, s.reason)})
	return true
}

// storageRecovered ends a storage failure at a completed checkpoint.
func (c *Coordinator) storageRecovered() {
	if c.storage.failing {
		c.emit(StorageRecovered{Failures: c.storage.failures, Duration: c.now.Sub(c.storage.since)})
	}
	c.storage = storageState{}
}

// storageBackingOff reports whether storage fails and the next attempt
// must wait (for the final checkpoint too, which is otherwise retaken at
// once).
func (c *Coordinator) storageBackingOff() bool {
	return c.storage.failing && c.now.Before(c.storage.retryAt)
}

// probeEvery is how often storage is probed while it fails.
func (c *Coordinator) probeEvery() time.Duration {
	if c.cfg.Interval > 0 {
		return c.cfg.Interval
	}
	return time.Second
}

// maybeProbe asks for a probe when one is due.
func (c *Coordinator) maybeProbe() {
	s := &c.storage
	if !s.failing || s.probing || c.suspended || c.now.Before(s.nextProbe) {
		return
	}
	s.probing = true
	s.nextProbe = c.now.Add(c.probeEvery())
	c.emit(ProbeStorage{})
}

// probed takes a probe's result: success after a failed probe makes the
// next checkpoint due at once.
func (c *Coordinator) probed(err error) {
	s := &c.storage
	s.probing = false
	if !s.failing {
		return
	}
	if err != nil {
		s.probeFailed = true
		return
	}
	if s.probeFailed {
		s.probeFailed = false
		s.retryAt = c.now
	}
}

// roundDuration shortens a duration for a message: whole seconds from a
// second on, milliseconds below.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// model is a deliberately naive reference for the coordinator: it never
// forgets a checkpoint, keeps each one's fate as a string, rescans
// everything on every question, and writes its actions directly in the
// golden text form. It shares no code with the coordinator but the types.
type model struct {
	interval, timeout, minPause time.Duration
	maxConc, tolerable          int
	tasks                       []checkpoint.TaskID

	first checkpoint.ID
	cps   []*modelCP // cps[i] is checkpoint first+i

	clock       time.Time
	periodicAt  time.Time
	pauseFrom   time.Time // zero: nothing ended yet
	stampPause  bool      // an untimed event ended a checkpoint
	stampSched  bool      // an untimed event reset the job
	ended       bool
	finalDue    bool // the final checkpoint waits for the pending ones' acks
	suspended   bool
	why         string // the Suspend's reason
	streak      int
	lastDone    checkpoint.ID
	lastDoneDur time.Duration

	// Storage failures: not counted towards tolerable, no failover; a
	// backoff between attempts, probes each interval, alerts at most
	// every alertEvery, the job failed past storageTimeout or when the
	// oldest open transaction (since openFrom) would outlive txnTimeout.
	storageTimeout, maxBackoff, alertEvery, txnTimeout time.Duration
	sOn                                                bool
	sFrom, sRetry, sProbeAt, sAlertAt, openFrom        time.Time
	sCount, sSinceAlert                                int
	sWait                                              time.Duration
	sProbing, sProbeBad, sDone                         bool
	sReason                                            string
	storageFails, timeouts                             int

	out []string
}

type modelCP struct {
	kind   checkpoint.Kind
	ts     time.Time
	acked  []checkpoint.TaskID
	fate   string // "pending", "persisting", "completed", "failed", "aborted"
	orphan bool
}

// probeGap is the model's probe period: the interval, or a second.
func (m *model) probeGap() time.Duration {
	if m.interval > 0 {
		return m.interval
	}
	return time.Second
}

func modelRound(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// storageFail is the model's rule for a checkpoint failed by storage.
func (m *model) storageFail(reason string) {
	if !m.sOn {
		m.sOn, m.sFrom, m.sCount, m.sSinceAlert, m.sAlertAt, m.sDone, m.sProbing = true, m.clock, 0, 0, time.Time{}, false, false
		m.sWait = m.interval
		if m.sWait <= 0 {
			m.sWait = time.Second
		}
		m.sProbeAt = m.clock.Add(m.probeGap())
	} else {
		limit := m.maxBackoff
		if m.interval > limit {
			limit = m.interval
		}
		m.sWait *= 2
		if m.sWait > limit {
			m.sWait = limit
		}
	}
	m.sCount++
	m.sSinceAlert++
	m.sRetry = m.clock.Add(m.sWait)
	m.sProbeBad = false
	if m.sDone {
		return
	}
	m.sReason = reason
	for_ := m.clock.Sub(m.sFrom)
	if m.storageBound() {
		return
	}
	if m.txnTimeout > 0 && m.sRetry.Add(m.timeout).Sub(m.openFrom) >= m.txnTimeout {
		m.sDone = true
		m.emit("fail-job: checkpoint storage has failed for %v (%d checkpoints) and no checkpoint completed for %v: the two-phase-commit sinks' open transactions would outlive their transaction timeout of %v before the next attempt could complete (within execution.checkpointing.timeout), and be aborted by their system; failing the job now rather than losing output; last: %s",
			modelRound(for_), m.sCount, modelRound(m.clock.Sub(m.openFrom)), m.txnTimeout, reason)
		return
	}
	if m.sAlertAt.IsZero() || m.clock.Sub(m.sAlertAt) >= m.alertEvery {
		var left time.Duration
		if m.storageTimeout > 0 {
			left = m.storageTimeout - for_
		}
		m.emit("storage-alert since=%v failures=%d recent=%d next-retry=%v give-up-in=%v: %s", since(m.sFrom), m.sCount, m.sSinceAlert, m.sWait, left, reason)
		m.sAlertAt, m.sSinceAlert = m.clock, 0
	}
}

// storageBound fails the job once storage has failed for the timeout.
func (m *model) storageBound() bool {
	if !m.sOn || m.sDone || m.storageTimeout <= 0 {
		return m.sDone
	}
	for_ := m.clock.Sub(m.sFrom)
	if for_ < m.storageTimeout {
		return false
	}
	m.sDone = true
	m.emit("fail-job: checkpoint storage has failed for %v (%d checkpoints; execution.checkpointing.storage-failure-timeout is %v); last: %s", modelRound(for_), m.sCount, m.storageTimeout, m.sReason)
	return true
}

// waiting reports whether storage fails and its backoff has not passed.
func (m *model) waiting() bool { return m.sOn && m.clock.Before(m.sRetry) }

func newModel(cfg Config, tasks []checkpoint.TaskID, next checkpoint.ID, now time.Time) *model {
	m := &model{interval: cfg.Interval, timeout: cfg.Timeout, minPause: cfg.MinPause,
		maxConc: cfg.MaxConcurrent, tolerable: cfg.TolerableFailures, tasks: tasks,
		first: next, clock: now, periodicAt: now.Add(cfg.Interval), openFrom: now,
		storageTimeout: cfg.StorageFailureTimeout, maxBackoff: cfg.StorageMaxBackoff, alertEvery: cfg.AlertEvery, txnTimeout: cfg.TransactionTimeout}
	if m.maxBackoff == 0 {
		m.maxBackoff = 2 * time.Minute
	}
	if m.alertEvery == 0 {
		m.alertEvery = 30 * time.Second
	}
	if m.timeout == 0 {
		m.timeout = 10 * time.Minute
	}
	if m.maxConc == 0 || m.minPause > 0 {
		m.maxConc = 1
	}
	return m
}

// ids lists every checkpoint ever triggered, ascending.
func (m *model) ids() []checkpoint.ID {
	ids := make([]checkpoint.ID, len(m.cps))
	for i := range m.cps {
		ids[i] = m.first + checkpoint.ID(i)
	}
	return ids
}

func (m *model) cp(id checkpoint.ID) *modelCP {
	if i := int(id - m.first); i >= 0 && i < len(m.cps) {
		return m.cps[i]
	}
	return nil
}

func (m *model) count(fates ...string) int {
	n := 0
	for _, cp := range m.cps {
		if slices.Contains(fates, cp.fate) {
			n++
		}
	}
	return n
}

func (m *model) live(id checkpoint.ID, fate string) *modelCP {
	if cp := m.cp(id); cp != nil && cp.fate == fate {
		return cp
	}
	return nil
}

func (m *model) emit(format string, args ...any) { m.out = append(m.out, fmt.Sprintf(format, args...)) }

func (m *model) see(now time.Time) {
	if now.After(m.clock) {
		m.clock = now
	}
	if m.stampPause {
		m.pauseFrom, m.stampPause = m.clock, false
	}
	if m.stampSched {
		m.periodicAt, m.stampSched = m.clock.Add(m.interval), false
	}
}

func (m *model) step(ev Event) []string {
	m.out = nil
	switch ev := ev.(type) {
	case Tick:
		m.see(ev.Now)
		for again := true; again; {
			again = false
			for _, id := range m.ids() {
				cp := m.cp(id)
				if cp.fate == "pending" && !m.clock.Before(cp.ts.Add(m.timeout)) {
					m.failCP(id, fmt.Sprintf("expired after execution.checkpointing.timeout of %v", m.timeout), true, CauseTimeout)
					again = true
					break
				}
			}
		}
		m.storageBound()
		if m.sOn && !m.sProbing && !m.suspended && !m.clock.Before(m.sProbeAt) {
			m.sProbing = true
			m.sProbeAt = m.clock.Add(m.probeGap())
			m.emit("probe-storage")
		}
		if due, ok := m.due(); ok && !m.clock.Before(due) {
			m.start(checkpoint.Periodic)
			m.periodicAt = m.clock.Add(m.interval)
		}
	case TriggerRequest:
		m.see(ev.Now)
		inFlight := m.count("pending", "persisting")
		if m.suspended {
			m.emit("rejected: checkpointing suspended: %s", m.why)
		} else if m.ended {
			m.emit("rejected: all sources reached end of input: only the final checkpoint is taken")
		} else if inFlight >= m.maxConc {
			extra := ""
			if m.minPause > 0 {
				extra = " (min-pause > 0 implies 1)"
			}
			m.emit("rejected: too many concurrent checkpoints: %d pending, execution.checkpointing.max-concurrent-checkpoints is %d%s", inFlight, m.maxConc, extra)
		} else {
			m.start(checkpoint.Periodic)
		}
	case EndOfInput:
		m.see(ev.Now)
		if !m.ended {
			m.ended = true
			if !m.suspended {
				m.finalDue = true
			}
		}
	case Ack:
		cp := m.live(ev.ID, "pending")
		if cp == nil || !slices.Contains(m.tasks, ev.Task) || slices.Contains(cp.acked, ev.Task) {
			break
		}
		cp.acked = append(cp.acked, ev.Task)
		if len(cp.acked) == len(m.tasks) {
			cp.fate = "persisting"
			names := ""
			for i, t := range m.tasks {
				if i > 0 {
					names += ","
				}
				names += taskName(t)
			}
			m.emit("persist id=%d kind=%s ts=%v states=%s", ev.ID, cp.kind, since(cp.ts), names)
		}
	case Decline:
		if m.live(ev.ID, "pending") != nil && slices.Contains(m.tasks, ev.Task) {
			cause := CauseDeclined
			if ev.Cause == CauseStorage {
				cause = CauseStorage
			}
			m.failCP(ev.ID, fmt.Sprintf("declined by task %s: %s", taskName(ev.Task), ev.Reason), false, cause)
		}
	case StorageProbed:
		m.see(ev.Now)
		m.sProbing = false
		if m.sOn {
			if ev.Err != nil {
				m.sProbeBad = true
			} else if m.sProbeBad {
				m.sProbeBad = false
				m.sRetry = m.clock
			}
		}
	case Persisted:
		m.see(ev.Now)
		cp := m.live(ev.ID, "persisting")
		switch {
		case cp == nil:
		case ev.ID < m.lastDone:
			cp.fate = "aborted"
			m.emit("abort id=%d kind=%s subsumed: subsumed by checkpoint %d", ev.ID, cp.kind, m.lastDone)
		case ev.Err != nil && cp.orphan:
			cp.fate = "aborted"
			m.emit("abort id=%d kind=%s cause=task-failure: persist metadata after job failover: %v", ev.ID, cp.kind, ev.Err)
		case ev.Err != nil:
			m.failCP(ev.ID, fmt.Sprintf("persist metadata: %v", ev.Err), true, CauseStorage)
		default:
			cp.fate = "completed"
			if m.sOn {
				m.emit("storage-recovered failures=%d after=%v", m.sCount, m.clock.Sub(m.sFrom))
			}
			m.sOn, m.sProbing, m.sProbeBad, m.sDone = false, false, false, false
			m.openFrom = cp.ts
			m.lastDone, m.lastDoneDur = ev.ID, m.clock.Sub(cp.ts)
			m.streak = 0
			m.pauseFrom = m.clock
			m.emit("notify-complete id=%d kind=%s", ev.ID, cp.kind)
			for _, id := range m.ids() {
				if id < ev.ID && m.cp(id).fate == "pending" {
					m.cp(id).fate = "aborted"
					m.emit("abort id=%d kind=%s subsumed: subsumed by checkpoint %d", id, m.cp(id).kind, ev.ID)
				}
			}
		}
	case Reset:
		m.resetJob("job failover: "+ev.Reason, false)
	case Suspend:
		m.resetJob("checkpointing suspended: "+ev.Reason, false)
		m.suspended, m.why = true, ev.Reason
	case Resume:
		m.see(ev.Now)
		if m.suspended {
			m.suspended = false
			m.periodicAt = m.clock.Add(m.interval)
			if m.ended {
				m.finalDue = true
			}
		}
	}
	if m.finalDue && !m.suspended && m.count("pending") == 0 && !m.waiting() {
		m.finalDue = false
		m.start(checkpoint.Final)
	}
	return m.out
}

func (m *model) due() (time.Time, bool) {
	if m.interval == 0 || m.ended || m.suspended || m.stampPause || m.stampSched || m.count("pending", "persisting") >= m.maxConc || m.sOn && m.sDone {
		return time.Time{}, false
	}
	due := m.periodicAt
	if m.sOn && m.sRetry.After(due) {
		due = m.sRetry
	}
	if !m.pauseFrom.IsZero() && m.pauseFrom.Add(m.minPause).After(due) {
		due = m.pauseFrom.Add(m.minPause)
	}
	return due, true
}

func (m *model) deadline() (time.Time, bool) {
	var cands []time.Time
	if m.interval > 0 && !m.ended && !m.suspended && (m.stampPause || m.stampSched) {
		cands = append(cands, m.clock)
	}
	if due, ok := m.due(); ok {
		cands = append(cands, due)
	}
	for _, cp := range m.cps {
		if cp.fate == "pending" {
			cands = append(cands, cp.ts.Add(m.timeout))
		}
	}
	if m.sOn && !m.sProbing && !m.suspended {
		cands = append(cands, m.sProbeAt)
	}
	if m.finalDue && m.waiting() {
		cands = append(cands, m.sRetry)
	}
	if m.sOn && !m.sDone && m.storageTimeout > 0 {
		cands = append(cands, m.sFrom.Add(m.storageTimeout))
	}
	if len(cands) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(cands, func(a, b time.Time) int { return a.Compare(b) }), true
}

func (m *model) start(kind checkpoint.Kind) {
	m.emit("trigger id=%d kind=%s ts=%v", m.first+checkpoint.ID(len(m.cps)), kind, since(m.clock))
	m.cps = append(m.cps, &modelCP{kind: kind, ts: m.clock, fate: "pending"})
}

func (m *model) failCP(id checkpoint.ID, reason string, timed bool, cause Cause) {
	cp := m.cp(id)
	cp.fate = "failed"
	m.emit("abort id=%d kind=%s cause=%s: %s", id, cp.kind, cause, reason)
	if timed {
		m.pauseFrom = m.clock
	} else {
		m.stampPause = true
	}
	if cause == CauseTimeout {
		m.timeouts++
	}
	if cause == CauseStorage {
		m.storageFails++
		if cp.kind == checkpoint.Final && m.ended && !m.suspended {
			m.finalDue = true
		}
		m.storageFail(reason)
		return
	}
	m.streak++
	var why string
	switch {
	case m.streak <= m.tolerable:
		if cp.kind == checkpoint.Final && m.ended && !m.suspended {
			m.finalDue = true // tolerated: the next final checkpoint
		}
		return
	case cp.kind == checkpoint.Final:
		why = fmt.Sprintf("final checkpoint %d failed: %s", id, reason)
	default:
		why = fmt.Sprintf("checkpoint %d failed (%s): %d consecutive failures exceed execution.checkpointing.tolerable-failed-checkpoints=%d", id, reason, m.streak, m.tolerable)
	}
	m.streak = 0
	m.resetJob("job failover: "+why, timed)
	m.emit("failover: %s", why)
}

func (m *model) resetJob(reason string, timed bool) {
	for _, id := range m.ids() {
		switch cp := m.cp(id); cp.fate {
		case "persisting":
			cp.orphan = true
		case "pending":
			cp.fate = "aborted"
			m.emit("abort id=%d kind=%s cause=task-failure: %s", id, cp.kind, reason)
		}
	}
	m.ended, m.finalDue = false, false
	if timed {
		m.periodicAt = m.clock.Add(m.interval)
	} else {
		m.stampSched = true
	}
}

func (m *model) stats() Stats {
	return Stats{
		Triggered: len(m.cps), Completed: m.count("completed"), Failed: m.count("failed"),
		Aborted: m.count("aborted"), InProgress: m.count("pending", "persisting"),
		LastCompletedID: m.lastDone, LastCompletedDuration: m.lastDoneDur, ConsecutiveFailures: m.streak,
		FailedByCause: m.byCause(), StorageFailing: m.sOn, StorageFailingSince: m.storageSince(),
	}
}

func (m *model) byCause() (out [numCauses]int) {
	out[CauseStorage] = m.storageFails
	out[CauseTimeout] = m.timeouts
	out[CauseDeclined] = m.count("failed") - m.storageFails - m.timeouts
	return out
}

func (m *model) storageSince() time.Time {
	if m.sOn {
		return m.sFrom
	}
	return time.Time{}
}

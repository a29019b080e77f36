package jobmaster

import (
	"errors"

	"github.com/weirstream/weir/internal/weak"
)

// errWeakSavepoint answers a savepoint, and a stop with a savepoint, in
// WEAKLY_CONSISTENT mode.
var errWeakSavepoint = errors.New("savepoints and stop-with-savepoint need a consistent cut of every task's state, which execution.checkpointing.mode WEAKLY_CONSISTENT never takes (each task snapshots on its own); run jobs that need them with EXACTLY_ONCE")

// serve handles an outside request in WEAKLY_CONSISTENT mode. A
// checkpoint request triggers every running task's snapshot now (a task
// with one in flight takes its next right after) and is answered with the
// first id. A stop without a target stops the sources: each task then ends
// its input, takes its own final snapshot and finishes; it is answered
// once the job ended. Savepoints are refused.
func (w *taskMode) serve(req Request) {
	m := w.m
	switch req.Kind {
	case RequestCheckpoint:
		ans := Answer{Req: req.Req}
		for _, act := range w.step(weak.Request{Now: m.now}) {
			if t, ok := act.(weak.Trigger); ok {
				ans.ID = t.ID
				break
			}
		}
		if ans.ID == 0 {
			ans.Err = errors.New("no task snapshot triggered now: no task runs without one in flight; those in flight take their next as soon as they end")
		}
		m.emit(ans)
	case RequestStop:
		if req.Target != "" {
			m.emit(Answer{Req: req.Req, Err: errWeakSavepoint})
			return
		}
		m.stops = append(m.stops, pendingStop{req: req, result: Answer{Req: req.Req}, done: true})
		m.stopSources(nil)
	default:
		m.emit(Answer{Req: req.Req, Err: errWeakSavepoint})
	}
}

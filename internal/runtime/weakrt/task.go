package weakrt

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/runtime"
)

// weakTask is a task's recovery in WEAKLY_CONSISTENT mode: how far it
// read each input channel, the logs of its output channels, its
// determinant log and, after a restore, the replay of that log. Touched
// by the task goroutine only.
type weakTask struct {
	t    runtime.TaskView
	id   checkpoint.TaskID
	reg  *weakRegistry
	exec deployment.ExecutionID
	// inputs are per gate channel: buffers and records consumed.
	inputs []checkpoint.WeakChannelPosition
	// outs are the output channels' logs, per writer, per consumer.
	outs [][]*weakSender
	dets *determinants
	// While replaying, the task polls only the channel of determinant
	// next until it passed replayTo; cur is the one channel unblocked.
	replaying  bool
	next       uint64
	replayTo   uint64
	cur        int
	recovering bool // a restarted attempt that has not processed yet
	// ended: the restored snapshot was taken after the input ended.
	ended bool
	// eop: the gate channels that delivered their end of partition.
	eop []bool
	// storeLogs: snapshots store the output logs
	// (JobConfig.WeakLogSnapshot).
	storeLogs bool
	// clock is the processing time (unix ms) a consuming task's operators
	// read (weakNow): the time logged with the buffer they process or the
	// timers they fire; noClock before the first. Atomic: an operator may read
	// its clock off the task goroutine (state TTL in a snapshot's
	// background part).
	clock atomic.Int64
}

var _ runtime.Recovery = (*weakTask)(nil)

// setupWeak prepares a task of a WEAKLY_CONSISTENT job: restored positions
// (pos, nil when it starts without a snapshot of its own) and, for a
// restarted consuming task, the replay of the order it consumed its input
// in since that snapshot.
//
// lostInput says the producers' logs no longer held some input the task
// needs: its replay cannot follow the failed attempt's order then, so it
// reads freely, and what its output logs skip as already sent may differ
// from what it emits now, counted as possibly duplicated.
//
// logs reads what pos's snapshot stored of the task's output logs, for a
// task whose logs were lost with its TaskManager.
func setupWeak(t runtime.TaskView, reg *weakRegistry, exec deployment.ExecutionID, outs [][]*weakSender, pos *checkpoint.WeakPositions, lostInput bool, storeLogs bool, logs func() (map[[2]int]*restoredLog, error)) (*weakTask, error) {
	w := &weakTask{t: t, id: t.Task(), storeLogs: storeLogs}
	n := t.InputChannels()
	// A later attempt whose output logs no attempt here set up: it took
	// over from one whose TaskManager was lost, and the logs that held
	// its output went with it (weakSender.restart, resumeWith).
	lostLog := exec.Attempt > 0
	w.reg, w.exec, w.outs, w.cur = reg, exec, outs, -1
	w.recovering = exec.Attempt > 0
	w.ended = pos != nil && pos.Ended
	nondeterministic := lostInput
	if n > 0 {
		w.inputs = make([]checkpoint.WeakChannelPosition, n)
		if pos != nil {
			copy(w.inputs, pos.Inputs)
			t.RestoreChannelEvents(w.inputs)
		}
		w.dets = reg.determinants(w.id)
		// Operators read the processing time of what they process, logged
		// with it, so a replay reads what the failed attempt read: a
		// processing-time window puts each record where that attempt did.
		w.clock.Store(noClock)
		t.SetOperatorClock(w.now)
		from := uint64(0)
		if pos != nil {
			from = pos.Determinants
		}
		// The failed attempt's order is of no use when it names buffers
		// that are gone, or when its start was dropped for the log's
		// bound (no snapshot completed for maxDeterminants entries).
		// The log ends before from when it was lost with the process
		// that held it (a TaskManager died): this one starts empty.
		if w.dets.base > from || w.dets.end() < from {
			nondeterministic = true
		}
		if nondeterministic {
			w.dets.truncate(from)
			w.dets.chans = w.dets.chans[:0]
			w.dets.base = max(w.dets.base, from)
		}
		if end := w.dets.end(); end > from {
			w.replaying, w.next, w.replayTo = true, from+1, end
			for ch := range n {
				t.BlockInput(ch)
			}
		}
	}
	var restored map[[2]int]*restoredLog
	if lostLog && pos != nil && pos.Logs != nil && anyUnset(outs) {
		var err error
		if restored, err = logs(); err != nil {
			return nil, fmt.Errorf("restore the output logs its snapshot stored: %w", err)
		}
	}
	for k, ws := range outs {
		var emitted uint64 // records the writer of edge k sent before pos
		for j, s := range ws {
			var at uint64
			if pos != nil && k < len(pos.Outputs) && j < len(pos.Outputs[k]) {
				at = pos.Outputs[k][j]
			}
			emitted += at
			done := false
			var err error
			if rl := restored[[2]int{k, j}]; rl != nil {
				done, err = s.resumeWith(rl, at, nondeterministic)
			}
			if err == nil && !done {
				err = s.restart(at, nondeterministic, lostLog)
			}
			if err != nil {
				return nil, fmt.Errorf("output %d to subtask %d: %w", k, j, err)
			}
		}
		// A round robin starts where the snapshot's attempt was, so the
		// records emitted again go to the channels whose logs hold them.
		t.SetRebalancePosition(k, emitted)
	}
	return w, nil
}

// anyUnset reports whether no producer attempt here set up one of the
// logs yet.
func anyUnset(outs [][]*weakSender) bool {
	for _, ws := range outs {
		for _, s := range ws {
			s.mu.Lock()
			produced := s.produced
			s.mu.Unlock()
			if !produced {
				return true
			}
		}
	}
	return false
}

// maxDeterminants bounds a task's determinant log (16 bytes an entry):
// beyond it, without a completed snapshot to truncate it, the oldest half
// goes, and a restart from before them reads its replay freely.
const maxDeterminants = 1 << 20

// appendDeterminant logs d, keeping the log within maxDeterminants.
func (w *weakTask) appendDeterminant(d determinant) {
	if len(w.dets.chans) >= maxDeterminants {
		n := len(w.dets.chans) / 2
		w.dets.chans = append(w.dets.chans[:0], w.dets.chans[n:]...)
		w.dets.base += uint64(n)
	}
	w.dets.chans = append(w.dets.chans, d)
}

// RestoredAfterEnd: the restored snapshot was taken after the input
// ended; its producers' end of data is behind the positions.
func (w *weakTask) RestoredAfterEnd() bool { return w.ended }

// SendsBarriers: a snapshot cuts each channel at the positions it stores,
// no barrier goes downstream.
func (w *weakTask) SendsBarriers() bool { return false }

// BeforePoll, while replaying, fires the timers the next determinants
// name at their logged times, then unblocks only the channel of the next
// one.
func (w *weakTask) BeforePoll(ctx context.Context) error {
	for w.replaying && w.dets.chans[w.next-w.dets.base-1].ch < 0 {
		at := w.dets.chans[w.next-w.dets.base-1].at
		w.clock.Store(at)
		if err := w.t.FireTimersAt(ctx, at); err != nil {
			return err
		}
		w.advance()
	}
	if !w.replaying {
		return nil
	}
	want := int(w.dets.chans[w.next-w.dets.base-1].ch)
	if want != w.cur {
		if w.cur >= 0 {
			w.t.BlockInput(w.cur)
		}
		w.t.UnblockInput(want)
		w.cur = want
	}
	return nil
}

// advance moves the replay past one determinant, ending it after the last.
func (w *weakTask) advance() {
	w.next++
	if w.next > w.replayTo {
		w.replaying = false
		w.cur = -1
		w.t.UnblockInputs()
	}
}

// gap handles a buffer that skips entries of its producer's log: they
// were dropped before this attempt read them (counted lost by the log).
// A replay cannot follow the failed attempt's order any more: it ends
// here, the determinants it did not reach are forgotten, and what the
// task re-emits where its output logs hold records already counts as
// possibly duplicated.
func (w *weakTask) gap() {
	if w.replaying {
		w.dets.chans = w.dets.chans[:w.next-1-w.dets.base]
		w.replaying = false
		w.cur = -1
		w.t.UnblockInputs()
	}
	for _, ws := range w.outs {
		for _, s := range ws {
			s.nondeterministic()
		}
	}
}

// FiresTimers: a replay fires timers where the determinants say, never on
// the task's clock.
func (w *weakTask) FiresTimers() bool { return !w.replaying }

// TimersDue logs a firing of processing-time timers at time at, the time
// the operators read while they fire.
func (w *weakTask) TimersDue(at int64) {
	if w.dets != nil && !w.replaying {
		w.appendDeterminant(determinant{ch: -1, at: at})
		w.clock.Store(at)
	}
}

// now is a consuming task's processing-time clock for its operators in
// WEAKLY_CONSISTENT mode (OperatorContext.Now): the time logged with the
// buffer it processes or the timers it fires, the task's clock before
// the first.
func (w *weakTask) now() time.Time {
	if ms := w.clock.Load(); ms != noClock {
		return time.UnixMilli(ms)
	}
	return w.t.Now()
}

// noClock marks weakTask.clock before the task polled or fired anything
// (0 is a time a test clock can log).
const noClock = math.MinInt64

// Polled records a polled buffer: the channel's position and, unless it
// replays, a determinant. It skips an end of data or of partition the
// channel delivered before: a producer whose log was lost with its
// TaskManager may send its end again (its new log cannot know the
// consumer read it).
func (w *weakTask) Polled(ch int, b network.Buffer) (skip bool, err error) {
	in := &w.inputs[ch]
	switch {
	case b.Kind == network.EndOfData && in.EndOfData:
		return true, nil
	case b.Kind == network.EndOfPartition:
		if w.eop == nil {
			w.eop = make([]bool, len(w.inputs))
		}
		if w.eop[ch] {
			return true, nil
		}
		w.eop[ch] = true
	}
	if b.LogBuffers > in.Buffers+1 {
		w.gap()
	}
	in.Buffers, in.Records = b.LogBuffers, b.LogRecords
	switch b.Kind {
	case network.Watermark:
		in.Watermark, in.Marked = b.Watermark, true
	case network.WatermarkStatus:
		in.Idle = b.Idle
	case network.EndOfData:
		in.EndOfData = true
	}
	if w.recovering && b.Kind == network.Data {
		w.recovering = false
		w.reg.recovered(w.id)
	}
	if !w.replaying {
		at := w.t.Now().UnixMilli()
		w.appendDeterminant(determinant{ch: int32(ch), at: at})
		w.clock.Store(at)
		return false, nil
	}
	d := w.dets.chans[w.next-w.dets.base-1]
	if int(d.ch) != ch {
		return false, fmt.Errorf("replay: determinant %d names channel %d, polled channel %d", w.next, d.ch, ch)
	}
	w.clock.Store(d.at)
	w.advance()
	return false, nil
}

// Snapshot records the positions where snapshot id cuts each channel
// (after the open batches went out) and, when snapshots store them, takes
// the output logs' contents; weakSnapshot writes and attaches them.
func (w *weakTask) Snapshot(ctx context.Context, id checkpoint.ID) (runtime.RecoverySnapshot, error) {
	pos, err := w.positions(ctx)
	if err != nil {
		return nil, err
	}
	w.reg.snapshotTaken(w.id, id, pos)
	s := &weakSnapshot{w: w, pos: pos}
	if len(w.outs) > 0 && w.storeLogs {
		if s.logs, err = w.snapshotLogs(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// weakSnapshot is the asynchronous part of a task's snapshot in
// WEAKLY_CONSISTENT mode.
type weakSnapshot struct {
	w    *weakTask
	pos  *checkpoint.WeakPositions
	logs *logSnapshot // nil unless snapshots store the output logs
}

// Finish writes the output logs, if taken, and puts the positions on the
// head operator's state.
func (s *weakSnapshot) Finish(ctx context.Context, sw dataflow.StateWriter, st *checkpoint.TaskState) error {
	head := s.w.t.HeadUID()
	p := *s.pos
	if s.logs != nil {
		var err error
		if p.Logs, err = writeLogs(ctx, sw, weakLogFileName(head, s.w.id.Subtask), s.logs); err != nil {
			return err
		}
	}
	attachWeak(st, head, &p, s.w.logRows())
	return nil
}

// positions flushes the writers and returns the positions a snapshot
// taken now stores.
func (w *weakTask) positions(ctx context.Context) (*checkpoint.WeakPositions, error) {
	if err := w.t.FlushOutputs(ctx); err != nil {
		return nil, fmt.Errorf("flush before the snapshot: %w", err)
	}
	p := &checkpoint.WeakPositions{Inputs: append([]checkpoint.WeakChannelPosition(nil), w.inputs...), Ended: w.t.InputEnded()}
	for _, ws := range w.outs {
		row := make([]uint64, len(ws))
		for j, s := range ws {
			row[j] = s.cursor()
		}
		p.Outputs = append(p.Outputs, row)
	}
	if w.dets != nil {
		p.Determinants = w.dets.end()
		if w.replaying {
			p.Determinants = w.next - 1
		}
	}
	return p, nil
}

// Aborted forgets snapshot id's positions.
func (w *weakTask) Aborted(id checkpoint.ID) { w.reg.aborted(w.id, id) }

// Completed releases what the task's completed snapshot id covers: its
// producers' logs up to the positions it read, its determinants up to it.
func (w *weakTask) Completed(id checkpoint.ID) error {
	w.reg.mu.Lock()
	p := w.reg.pending[w.id][id]
	w.reg.mu.Unlock()
	if err := w.reg.completed(w.id, w.exec, id); err != nil {
		return err
	}
	if p != nil && w.dets != nil && !w.replaying {
		w.dets.truncate(p.Determinants)
	}
	return nil
}

// attachWeak puts the positions, and the state-table rows of the output
// logs, on the head operator's state.
func attachWeak(st *checkpoint.TaskState, headUID string, p *checkpoint.WeakPositions, rows []checkpoint.StateSchema) {
	for i := range st.Operators {
		if st.Operators[i].UID == headUID {
			st.Operators[i].Weak = p
			st.Operators[i].Schemas = append(st.Operators[i].Schemas, rows...)
			return
		}
	}
	st.Operators = append([]checkpoint.OperatorSubtaskState{{UID: headUID, Weak: p, Schemas: rows}}, st.Operators...)
}

// logRows are the state-table rows of the task's output logs, one per
// output edge with a codec, named "out<k>", with the edge's record type:
// a snapshot's stored logs hold records of that type.
func (w *weakTask) logRows() []checkpoint.StateSchema {
	var rows []checkpoint.StateSchema
	for k, ws := range w.outs {
		for _, s := range ws {
			s.mu.Lock()
			c := s.codec
			s.mu.Unlock()
			if c == nil {
				continue
			}
			r := checkpoint.StateSchema{Name: "out" + strconv.Itoa(k), Scope: checkpoint.ScopeWeakLog, Value: c.Schema()}
			r.Fingerprint = checkpoint.SchemaFingerprint(r)
			rows = append(rows, r)
			break
		}
	}
	return rows
}

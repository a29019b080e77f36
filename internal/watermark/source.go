package watermark

import (
	"errors"
	"fmt"
	"time"
)

// SourceConfig configures the watermark generation of one source subtask.
type SourceConfig struct {
	// NewGenerator returns the generator of a newly added split; each
	// split gets its own, so one split's lag or disorder cannot leak into
	// another's watermark. Required.
	NewGenerator func() Generator
	// IdleTimeout is how long a split may read no records before it stops
	// holding the subtask's watermark back (Flink's withIdleness). It is
	// measured with the now passed to Tick, in whole milliseconds (a
	// fraction rounds up). Zero disables idleness: a silent split, or a
	// subtask without splits, then holds event time back forever.
	IdleTimeout time.Duration
}

// Validate reports what is wrong with c, naming the field and the fix.
func (c SourceConfig) Validate() error {
	if c.NewGenerator == nil {
		return errors.New("watermark source: NewGenerator is nil; give it the generator factory of the watermark strategy")
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("watermark source: IdleTimeout %v is negative; use 0 to disable idleness", c.IdleTimeout)
	}
	return nil
}

// srcSplit is the state of one split of a Source.
type srcSplit struct {
	gen Generator
	wm  int64 // the generator's last periodic watermark, never decreasing
	// busy: records (or the split's addition) since the last tick. The
	// tick that sees it restarts the quiet timer, so the hot path only
	// sets a flag and needs no clock.
	busy       bool
	quietSince int64 // now of the last tick that saw the split busy
	idle       bool
}

// Source generates the watermark of one source subtask: one Generator per
// split, combined into the subtask's output watermark. It is the pure
// half of a source operator; the operator feeds it the splits it is
// assigned, the timestamps it reads and the periodic ticks, and performs
// the actions it returns (the same Emit, MarkIdle and MarkActive as the
// Valve's) on its output.
//
// Its inputs are methods rather than Step(Event) as for the Valve because
// Records runs once per batch on the hot path, and boxing a batch into an
// Event interface would allocate.
type Source struct {
	newGen func() Generator
	idleMS int64 // 0: idleness off
	splits map[string]*srcSplit

	out   int64 // last emitted (or the restored floor)
	idle  bool  // MarkIdle was the last status action
	ended bool

	// The quiet timer of a subtask without splits: emptySeen is set by the
	// first tick that finds no split, emptySince is its now. AddSplit
	// clears it, so a split that came and went between ticks counts as
	// activity.
	emptySeen  bool
	emptySince int64

	acts []Action
}

// NewSource returns the watermark generation of a source subtask that has
// no split yet. floor is the watermark the subtask had emitted at the
// checkpoint it restores (MinWatermark on a fresh start): the output
// starts there, as if it had been emitted, and never goes below it, so a
// restored subtask does not move event time back while it re-reads
// records from its checkpointed offsets.
func NewSource(cfg SourceConfig, floor int64) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	idle := cfg.IdleTimeout.Milliseconds()
	if time.Duration(idle)*time.Millisecond < cfg.IdleTimeout {
		idle++ // a sub-millisecond remainder must not turn 0.5 ms into "off"
	}
	return &Source{
		newGen: cfg.NewGenerator,
		idleMS: idle,
		splits: make(map[string]*srcSplit),
		out:    floor,
	}, nil
}

// Watermark returns the output watermark so far: the last one emitted, or
// the floor.
func (s *Source) Watermark() int64 { return s.out }

// IsIdle reports whether the subtask last announced itself idle.
func (s *Source) IsIdle() bool { return s.idle }

// Ended reports whether EndOfInput was called.
func (s *Source) Ended() bool { return s.ended }

// NumSplits returns the number of splits that are assigned and not finished.
func (s *Source) NumSplits() int { return len(s.splits) }

// AddSplit starts tracking split id with a fresh generator and no
// watermark: until it reports one, or goes idle, it holds the output at
// its current value, as a new Kafka partition must. It panics if id is
// already tracked or the input ended: the operator assigns each split once.
func (s *Source) AddSplit(id string) {
	s.mustRun("add of split", id)
	if _, ok := s.splits[id]; ok {
		panic(fmt.Sprintf("watermark: split %q added twice; finish it before adding it again", id))
	}
	s.splits[id] = &srcSplit{gen: s.newGen(), wm: MinWatermark, busy: true}
	s.emptySeen = false
}

// FinishSplit stops tracking split id: it read all its records and no
// longer holds the output back. The output follows at the next Tick. It
// panics if id is not tracked.
func (s *Source) FinishSplit(id string) {
	s.mustRun("finish of split", id)
	if _, ok := s.splits[id]; !ok {
		panic(fmt.Sprintf("watermark: finish of split %q, which is not assigned; add it with AddSplit first", id))
	}
	delete(s.splits, id)
}

// Records feeds the timestamps of a batch of split id's records to its
// generator, in order. The split is active again at once, and if the
// subtask had announced itself idle the result is MarkActive: the
// operator performs it before it forwards the batch, so no record
// travels under an idle status. The watermark itself moves only at Tick.
// An empty batch is no activity. The result is reused by the next call.
//
// It does not allocate; it panics if id is not tracked or the input ended.
func (s *Source) Records(id string, ts []int64) []Action {
	s.acts = s.acts[:0]
	if len(ts) == 0 {
		return s.acts
	}
	sp := s.active(id)
	for _, t := range ts {
		sp.gen.OnEvent(t)
	}
	return s.acts
}

// RecordsMax is Records for a batch whose largest timestamp is maxTS,
// calling OnEvent once: exact for generators that only keep the maximum
// (Bounded), and it saves the operator the slice.
func (s *Source) RecordsMax(id string, maxTS int64) []Action {
	s.acts = s.acts[:0]
	s.active(id).gen.OnEvent(maxTS)
	return s.acts
}

// active marks split id busy and the subtask active.
func (s *Source) active(id string) *srcSplit {
	if s.ended {
		panic(fmt.Sprintf("watermark: records of split %q after the end of input", id))
	}
	sp, ok := s.splits[id]
	if !ok {
		panic(fmt.Sprintf("watermark: records of split %q, which is not assigned; add it with AddSplit first", id))
	}
	sp.busy, sp.idle = true, false
	if s.idle {
		s.idle = false
		s.acts = append(s.acts, MarkActive{})
	}
	return sp
}

// Tick is the periodic emission (pipeline.auto-watermark-interval): now is
// the processing time in ms (any origin, never decreasing). It decides
// which splits went idle, polls the generators of the others and emits
// the minimum of their watermarks if it is above the output. When every
// split is idle (or the subtask had none for the idle timeout) the
// subtask is idle: MarkIdle, once. The result is reused by the next call.
func (s *Source) Tick(now int64) []Action {
	s.acts = s.acts[:0]
	if s.ended {
		return s.acts
	}
	lowest, anyActive := MaxWatermark, false
	for _, sp := range s.splits {
		if s.idleMS > 0 {
			switch {
			case sp.busy:
				sp.busy, sp.quietSince = false, now
			case !sp.idle && now-sp.quietSince >= s.idleMS:
				sp.idle = true
			}
		}
		if sp.idle {
			// Not polled, as Flink's WatermarksWithIdleness: an idle split
			// has nothing to report until its records return.
			continue
		}
		if wm, ok := sp.gen.OnPeriodicEmit(); ok && wm > sp.wm {
			sp.wm = wm
		}
		anyActive = true
		lowest = min(lowest, sp.wm)
	}
	if anyActive {
		if lowest > s.out {
			s.emit(lowest)
		}
		return s.acts
	}
	if s.idleMS == 0 || s.idle {
		return s.acts
	}
	if len(s.splits) == 0 {
		if !s.emptySeen {
			s.emptySeen, s.emptySince = true, now
		}
		if now-s.emptySince < s.idleMS {
			return s.acts
		}
	}
	// Every split is idle. The output stays where it is, as Flink's
	// multiplexer: unlike the Valve's channels, an idle split's records
	// may return at any time below the largest split watermark, and
	// flushing to it would make them late.
	s.idle = true
	s.acts = append(s.acts, MarkIdle{})
	return s.acts
}

// EndOfInput: the bounded input ended, every split read to its end. The
// output jumps to MaxWatermark, which fires every event-time timer
// downstream (after MarkActive if the subtask was idle: downstream valves
// ignore watermarks of idle channels). Later calls return nothing, and
// Records, AddSplit and FinishSplit panic.
func (s *Source) EndOfInput() []Action {
	s.acts = s.acts[:0]
	if s.ended {
		return s.acts
	}
	s.ended = true
	clear(s.splits)
	if s.out < MaxWatermark {
		s.emit(MaxWatermark)
	}
	return s.acts
}

func (s *Source) emit(wm int64) {
	if s.idle {
		s.idle = false
		s.acts = append(s.acts, MarkActive{})
	}
	s.out = wm
	s.acts = append(s.acts, Emit{TS: wm})
}

func (s *Source) mustRun(what, id string) {
	if s.ended {
		panic(fmt.Sprintf("watermark: %s %q after the end of input", what, id))
	}
}

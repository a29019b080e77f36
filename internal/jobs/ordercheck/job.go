package ordercheck

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir"
)

// Options are the job's parameters.
type Options struct {
	// Sources is the parallelism of every stage, sources included.
	Sources int
	// Records is how many records each source subtask emits (bounded).
	Records int64
	// Lanes is how many keys each source subtask's records are spread
	// over (seq mod Lanes); at least 1.
	Lanes int
	// Payload is the size in bytes of each record's payload, allocated
	// fresh per record; 0 for none.
	Payload int
	// SinkRate is the most records per second each sink subtask takes; 0
	// leaves the sink unpaced (and the pipeline without backpressure).
	SinkRate float64
	// Store receives the committed output and the check stage's flags.
	Store *Store
	// EventTime stamps records with their seq as event time, with
	// monotonous watermarks, and makes the check stage also flag late
	// records and check its event-time timers (eventtime.go).
	EventTime bool
	// Now and Sleep are the pacing clock; nil means time.Now and
	// time.Sleep.
	Now   func() time.Time
	Sleep func(time.Duration)
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Sources < 1:
		return fmt.Errorf("ordercheck: %d sources: want at least 1", o.Sources)
	case o.Records < 0:
		return fmt.Errorf("ordercheck: %d records per source: want at least 0", o.Records)
	case o.Lanes < 1:
		return fmt.Errorf("ordercheck: %d lanes: want at least 1", o.Lanes)
	case o.Payload < 0:
		return fmt.Errorf("ordercheck: payload of %d bytes: want at least 0", o.Payload)
	case o.SinkRate < 0:
		return fmt.Errorf("ordercheck: sink rate %g: want at least 0 (0: unpaced)", o.SinkRate)
	case o.Store == nil:
		return errors.New("ordercheck: no Store: pass NewStore() to read the committed output")
	}
	return nil
}

// Build adds the job to env: sources -> hash -> check -> hash -> pace ->
// two-phase-commit sink. Every stage runs at parallelism o.Sources.
func Build(env *weir.Env, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	now, sleep := o.Now, o.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	lanes := int64(o.Lanes)
	key := func(r Record) int64 { return keyOf(r.Src, r.Seq, lanes) }

	src := weir.FromSource(env, func() weir.Source[Record] {
		return &seqSource{records: o.Records, payload: o.Payload}
	}).Name("sequences").UID("sequences").Parallelism(o.Sources)
	newCheck := func() weir.KeyedProcessFunction[int64, Record, Record] { return &check{lanes: lanes, store: o.Store} }
	if o.EventTime {
		src = withEventTime(src, o.Sources)
		newCheck = func() weir.KeyedProcessFunction[int64, Record, Record] {
			return &eventCheck{check: check{lanes: lanes, store: o.Store}}
		}
	}

	checked := weir.Process(weir.KeyBy(src, key), newCheck).Name("check").UID("check").Parallelism(o.Sources)

	paced := weir.Process(weir.KeyBy(checked, key), func() weir.KeyedProcessFunction[int64, Record, Record] {
		return pass{}
	}).Name("pass").UID("pass").Parallelism(o.Sources)

	weir.SinkToTransactional(paced, func() weir.TwoPhaseCommitSink[Record, Txn] {
		return &sink{store: o.Store, payload: o.Payload, pace: pacer{rate: o.SinkRate, now: now, sleep: sleep}}
	}).Name("slow-sink").UID("slow-sink").Parallelism(o.Sources)
	return nil
}

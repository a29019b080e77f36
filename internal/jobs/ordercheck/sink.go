package ordercheck

import (
	"context"
	"time"

	"github.com/weirstream/weir"
)

// sink is the paced two-phase-commit sink over a Store.
type sink struct {
	store   *Store
	payload int
	pace    pacer

	subtask, attempt int64
}

func (s *sink) Open(ctx context.Context, rc *weir.RuntimeContext, restored []Txn) error {
	s.subtask, s.attempt = int64(rc.Subtask()), int64(rc.Attempt())
	s.store.cleanUp(s.subtask, restored)
	s.pace.reset()
	return nil
}

func (s *sink) Begin(ctx context.Context) (Txn, error) {
	return s.store.begin(s.subtask, s.attempt), nil
}

func (s *sink) Write(_ context.Context, t Txn, batch []Record) error {
	if err := s.store.write(t, batch, s.payload); err != nil {
		return err
	}
	s.pace.wait(len(batch))
	return nil
}

func (s *sink) PreCommit(ctx context.Context, t Txn) error { return s.store.preCommit(t) }
func (s *sink) Commit(ctx context.Context, t Txn) error    { return s.store.commit(t) }
func (s *sink) Abort(ctx context.Context, t Txn) error     { return s.store.abort(t) }
func (s *sink) Close(context.Context) error                { return nil }

// pacer holds a sink to rate records per second. It is the slow consumer
// under test: blocking the task here is what exhausts the credits
// upstream. It never lets the sink catch up in a burst after an idle
// spell: the schedule restarts from now when it fell behind.
type pacer struct {
	rate  float64 // records per second; 0: no pacing
	now   func() time.Time
	sleep func(time.Duration)
	next  time.Time // when the next record is due
}

func (p *pacer) reset() { p.next = time.Time{} }

func (p *pacer) wait(n int) {
	if p.rate <= 0 || n == 0 {
		return
	}
	now := p.now()
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	if d := p.next.Sub(now); d > 0 {
		p.sleep(d)
	}
}

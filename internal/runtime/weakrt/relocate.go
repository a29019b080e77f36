package weakrt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/network/wire"
)

// A consumer in WEAKLY_CONSISTENT mode outlives the loss of a producer's
// TaskManager. The producer restarts elsewhere from its own snapshot and
// rebuilds its output log there (weak.Log.ResumeWith, Resume), which
// waits for each consumer's position before it numbers anything; the
// JobMaster tells every TaskManager where the producer moved
// (jobmaster.WeakPeers), and each running consumer reconnects its gate
// channel from that producer to the new attempt at the position of the
// last buffer it received, ended channels included (the new log must
// learn that the consumer has everything). Only the lost TaskManager's
// tasks restart.
//
// A consumer whose input connection broke waits for that word up to
// weakMoveTimeout, then fails (and restarts from its snapshot) as before:
// a producer's TaskManager that is alive but unreachable is never
// declared moved. Meanwhile it reopens the channel to the producer where
// it was as soon as a connection to that TaskManager is there again (a
// deployment between the two re-established it): a connection that broke
// between two live TaskManagers comes back without a move. It never dials
// for that itself: a dial to the lost process's address would hold the
// peer's dial slot, which a TaskManager restarted under the same id needs.

// weakMoveTimeout bounds how long a consumer whose producer's TaskManager
// went away waits to be told where the producer's new attempt runs: the
// JobManager's detection of the loss (immediate when the process dies,
// heartbeat.timeout when it hangs), the restart strategy's delay and the
// placement come first.
const weakMoveTimeout = 2 * time.Minute

// weakRemoteIn is one gate channel of a consumer fed by a producer on
// another TaskManager, across that producer's moves.
type weakRemoteIn struct {
	ctx  context.Context // the consumer execution's
	net  *remote.ConnManager
	self deployment.ResourceID
	cfg  remote.InputConfig // Key, Attempt (the consumer's), Gate, Channel, Weak
	fail func(error)        // fails the consumer
	// local switches the gate channel to the producer's log in this
	// TaskManager, from the position of the last buffer received (the
	// producer moved here); ended: the channel's end was received.
	local func(pos wire.LogPos, ended bool) error

	mu     sync.Mutex
	desc   deployment.ChannelDesc // where the producer runs
	ic     *remote.InputChannel
	gen    uint64 // the current ic's; a late failure of an earlier one is ignored
	timer  *time.Timer
	closed bool
	next   *deployment.ChannelDesc // latest move not started yet
	moving bool                    // a moveLoop runs
}

// open subscribes the channel to the producer at desc, replaying from the
// position its snapshot read (cfg.From).
func (w *weakRemoteIn) open(ctx context.Context, desc deployment.ChannelDesc) error {
	conn, err := w.net.Conn(ctx, string(desc.TM), desc.DataAddress)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.openLocked(conn, desc, w.cfg)
}

// openLocked opens an InputChannel with cfg on conn (mu held).
func (w *weakRemoteIn) openLocked(conn *remote.Conn, desc deployment.ChannelDesc, cfg remote.InputConfig) error {
	w.gen++
	gen := w.gen
	cfg.OnFailure = func(err error) { w.failed(gen, err) }
	ic, err := conn.OpenInput(cfg)
	if err != nil {
		return err
	}
	w.ic, w.desc = ic, desc
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	return nil
}

// failed handles a failure of the channel of generation gen: a broken
// connection waits for the producer's move, anything else fails the
// consumer.
func (w *weakRemoteIn) failed(gen uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || gen != w.gen {
		return
	}
	if !errors.Is(err, remote.ErrConnClosed) {
		w.fail(err)
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(weakMoveTimeout, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.closed && w.gen == gen {
				w.fail(fmt.Errorf("%w; no new attempt of the producer was placed within %s", err, weakMoveTimeout))
			}
		})
		go w.retry(gen)
	}
}

// retry reopens the channel of generation gen, whose connection broke, to
// the producer where it was once a connection to its TaskManager is there
// again, checking with backoff, until it succeeds or the channel moved,
// was reopened or closed meanwhile.
func (w *weakRemoteIn) retry(gen uint64) {
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-time.After(backoff):
		case <-w.ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
		w.mu.Lock()
		if w.closed || w.gen != gen {
			w.mu.Unlock()
			return
		}
		desc, old := w.desc, w.ic
		w.mu.Unlock()
		conn := w.net.Lookup(string(desc.TM))
		if conn == nil || conn.Err() != nil {
			continue // gone, most likely: the move will come
		}
		cfg := w.reopenConfig(old)
		w.mu.Lock()
		if w.closed || w.gen != gen {
			w.mu.Unlock()
			return
		}
		err := w.openLocked(conn, desc, cfg)
		w.mu.Unlock()
		if err == nil {
			return
		}
	}
}

// release forwards a completed snapshot's position to the producer's log.
func (w *weakRemoteIn) release(p wire.LogPos) {
	w.mu.Lock()
	ic := w.ic
	w.mu.Unlock()
	if ic != nil {
		ic.Release(p)
	}
}

// move reconnects the channel to the producer's new attempt at desc,
// unless it runs there already. Moves are handled in order on a goroutine
// of their own (connecting may take a while); a newer one replaces one
// not started yet.
func (w *weakRemoteIn) move(desc deployment.ChannelDesc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.next = &desc
	if !w.moving {
		w.moving = true
		go w.moveLoop()
	}
}

func (w *weakRemoteIn) moveLoop() {
	for {
		w.mu.Lock()
		if w.next == nil {
			w.moving = false
			w.mu.Unlock()
			return
		}
		desc := *w.next
		w.next = nil
		w.mu.Unlock()
		if err := w.reconnect(desc); err != nil && w.ctx.Err() == nil {
			w.fail(fmt.Errorf("reconnect input channel %d to producer %s, moved to TaskManager %s: %w", w.cfg.Channel, desc.Peer, desc.TM, err))
		}
	}
}

// reconnect closes the current channel and subscribes the gate channel to
// the producer at desc, from the position of the last buffer received.
func (w *weakRemoteIn) reconnect(desc deployment.ChannelDesc) error {
	w.mu.Lock()
	if w.closed || w.desc.TM == desc.TM && w.desc.DataAddress == desc.DataAddress && w.desc.Peer.Attempt >= desc.Peer.Attempt {
		w.mu.Unlock()
		return nil
	}
	old := w.ic
	if desc.TM == w.self {
		// The producer moved here: the gate channel is fed by its log in
		// this TaskManager from now on, and this remote input is done.
		w.closed, w.ic = true, nil
		if w.timer != nil {
			w.timer.Stop()
		}
		w.mu.Unlock()
		var pos wire.LogPos
		ended := false
		if old != nil {
			old.Close()
			pos, ended = old.Position()
		}
		return w.local(pos, ended)
	}
	w.mu.Unlock()

	conn, err := w.net.Conn(w.ctx, string(desc.TM), desc.DataAddress)
	if err != nil {
		return err
	}
	if old != nil {
		// Closing first stops the old channel delivering: its position
		// is final then.
		old.Close()
	}
	cfg := w.reopenConfig(old)
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return nil
		}
		err = w.openLocked(conn, desc, cfg)
		w.mu.Unlock()
		if !errors.Is(err, remote.ErrGateFull) {
			return err
		}
		// The gate channel is full of the old channel's buffers: the
		// task reads one soon (nothing blocks a weak consumer's reads).
		select {
		case <-time.After(5 * time.Millisecond):
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
	}
}

// close ends the channel for good (the consumer execution ended).
func (w *weakRemoteIn) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.ic != nil {
		w.ic.Close()
	}
}

// reopenConfig is the InputConfig that continues the closed channel old
// (nil: none was open): from the position of the last buffer it received,
// holding the gate's credit for its queued buffers, or draining if it had
// ended.
func (w *weakRemoteIn) reopenConfig(old *remote.InputChannel) remote.InputConfig {
	cfg := w.cfg
	if old != nil {
		pos, ended := old.Position()
		cfg.From, cfg.Reopen, cfg.Drain = pos, !ended, ended
	}
	return cfg
}

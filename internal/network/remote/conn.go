package remote

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/network/credit"
	"github.com/weirstream/weir/internal/network/wire"
)

// Conn is the one TCP connection between this TaskManager and a peer. It
// carries channels both ways: InputChannels this side consumes (ids chosen
// here) and OutChannels the peer subscribed to (ids chosen by the peer).
//
// Two goroutines serve it. The reader decodes frames and hands them to
// their channels without ever blocking (Deliver, credit bookkeeping), so
// one stalled consumer cannot stall the others. The writer serves, in
// rounds, control frames, credit announcements and one frame of every
// channel that may send, through a 64 KiB bufio.Writer it flushes when
// nothing else is ready.
//
// A malformed frame or a credit violation makes the reader send Error on
// channel 0, log the peer and the defect, and close the connection; its
// channels fail with ErrConnClosed, the process goes on.
//
// Lock order: PartitionRegistry.mu before OutChannel.mu, and
// OutChannel.mu or InputChannel.mu before Conn.mu; the gate's lock is
// never held while either is taken.
type Conn struct {
	nc      net.Conn
	rd      *wire.Reader
	local   string
	peer    string
	reg     *PartitionRegistry
	log     *slog.Logger
	segment int
	onClose func(*Conn)
	traffic *Traffic // the ConnManager's, shared by its connections

	wake     chan struct{} // cap 1: the writer has work
	failing  chan struct{} // closed by fail
	readDone chan struct{} // closed when the reader returns
	done     chan struct{} // closed when both goroutines returned

	unknown atomic.Uint64 // frames for channels that are gone

	mu       sync.Mutex
	err      error
	errFrame []byte          // Error on channel 0 to write before closing
	ctrl     []byte          // control frames waiting for the writer
	announce []*InputChannel // channels with credits to return
	ready    []*OutChannel   // channels that may send a frame
	inputs   map[uint32]*InputChannel
	outputs  map[uint32]*OutChannel
	nextID   uint32
}

func newConn(nc net.Conn, rd *wire.Reader, local, peer string, reg *PartitionRegistry, cfg *Config, traffic *Traffic, onClose func(*Conn)) *Conn {
	c := &Conn{
		traffic:  traffic,
		nc:       nc,
		rd:       rd,
		local:    local,
		peer:     peer,
		reg:      reg,
		log:      cfg.Logger,
		segment:  cfg.SegmentSize,
		onClose:  onClose,
		wake:     make(chan struct{}, 1),
		failing:  make(chan struct{}),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
		inputs:   make(map[uint32]*InputChannel),
		outputs:  make(map[uint32]*OutChannel),
	}
	go c.readLoop()
	go c.writeLoop()
	return c
}

// Peer returns the peer's ResourceID.
func (c *Conn) Peer() string { return c.peer }

// Err returns why the connection failed, or nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed once the connection is closed and its goroutines ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// UnknownFrames counts frames for channels this side no longer has, which
// is normal after a cancellation; they are dropped.
func (c *Conn) UnknownFrames() uint64 { return c.unknown.Load() }

// Close closes the connection and waits for its goroutines; its open
// channels fail with ErrConnClosed.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("connection to %s closed by %s: %w", c.peer, c.local, ErrConnClosed), false)
	<-c.done
	return nil
}

// fail closes the connection for err, once; with notify, the peer gets err
// as an Error frame on channel 0 first. Every channel still open fails.
func (c *Conn) fail(err error, notify bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if notify {
		c.errFrame = wire.AppendError(nil, 0, fmt.Sprintf("%s closes the connection: %v", c.local, err))
	}
	ins, outs := c.inputs, c.outputs
	c.inputs, c.outputs = nil, nil
	close(c.failing)
	c.mu.Unlock()
	// A writer stuck on a full socket (the peer stopped reading) gets an
	// error after the grace period instead of keeping us half-open.
	_ = c.nc.SetWriteDeadline(time.Now().Add(closeGrace))
	for _, ic := range ins {
		ic.connFailed(err)
	}
	for _, oc := range outs {
		oc.connFailed(err)
	}
	if c.reg != nil {
		c.reg.connFailed(c)
	}
	if c.onClose != nil {
		c.onClose(c)
	}
}

// protocolError closes the connection for a frame the peer should never
// have sent, with a logged error and an Error frame to the peer.
func (c *Conn) protocolError(err error) {
	c.log.Error("network: closing connection after a malformed frame", "peer", c.peer, "remote", c.nc.RemoteAddr().String(), "err", err)
	c.fail(fmt.Errorf("%w after a bad frame from %s: %w", ErrConnClosed, c.peer, err), true)
}

// readLoop runs until the connection fails.
func (c *Conn) readLoop() {
	defer close(c.readDone)
	for {
		f, err := c.rd.Next()
		if err != nil {
			c.readFailed(err)
			return
		}
		if err := c.dispatch(f); err != nil {
			c.protocolError(err)
			return
		}
	}
}

func (c *Conn) readFailed(err error) {
	switch {
	case errors.Is(err, wire.ErrMalformed):
		c.protocolError(err)
	case errors.Is(err, io.EOF):
		c.fail(fmt.Errorf("peer %s closed the connection: %w", c.peer, ErrConnClosed), false)
	default:
		select {
		case <-c.failing: // our own close ended the read
		default:
			c.log.Warn("network: connection broken", "peer", c.peer, "err", err)
		}
		c.fail(fmt.Errorf("connection to %s broken: %v: %w", c.peer, err, ErrConnClosed), false)
	}
}

// dispatch hands one frame to its channel. An error is the peer's protocol
// fault and closes the connection.
func (c *Conn) dispatch(f wire.Frame) error {
	switch f.Kind {
	case wire.Data:
		d, err := wire.DecodeData(f.Flags, f.Payload)
		if err != nil {
			return err
		}
		if ic := c.input(f.Channel); ic != nil {
			if err := ic.receiveData(f.Seq, d); err != nil {
				return err
			}
			c.traffic.received(len(d.Bytes), d.Records)
			return nil
		}
		c.unknown.Add(1)
	case wire.Event:
		m, err := wire.DecodeEvent(f.Flags, f.Payload)
		if err != nil {
			return err
		}
		if ic := c.input(f.Channel); ic != nil {
			return ic.receiveEvent(f.Seq, m)
		}
		c.unknown.Add(1)
	case wire.AddCredit:
		n, err := wire.DecodeAddCredit(f.Payload)
		if err != nil {
			return err
		}
		if oc := c.output(f.Channel); oc != nil {
			return oc.addCredit(n)
		}
		c.unknown.Add(1)
	case wire.CancelPartition:
		if err := wire.DecodeCancelPartition(f.Payload); err != nil {
			return err
		}
		// The registry first: it binds a waiting request under its lock,
		// so a request it no longer holds is bound by now and found below.
		if c.reg != nil && c.reg.cancelPending(c, f.Channel) {
			return nil
		}
		c.mu.Lock()
		oc := c.outputs[f.Channel]
		delete(c.outputs, f.Channel)
		c.mu.Unlock()
		if oc == nil {
			c.unknown.Add(1)
			return nil
		}
		oc.fail(fmt.Errorf("remote channel %s: consumer on %s: %w", oc.key, c.peer, ErrCancelled), false)
	case wire.Prioritize:
		id, err := wire.DecodePrioritize(f.Payload)
		if err != nil {
			return err
		}
		if oc := c.output(f.Channel); oc != nil {
			oc.prioritize(id)
			return nil
		}
		c.unknown.Add(1)
	case wire.Release:
		p, err := wire.DecodeRelease(f.Payload)
		if err != nil {
			return err
		}
		// A Release for a channel that is gone (it just ended or failed)
		// is dropped like any late frame: nothing is left to truncate.
		if oc := c.output(f.Channel); oc != nil {
			oc.release(p)
			return nil
		}
		c.unknown.Add(1)
	case wire.PartitionRequest:
		m, err := wire.DecodePartitionRequest(f.Payload)
		if err != nil {
			return err
		}
		c.mu.Lock()
		_, dup := c.outputs[f.Channel]
		c.mu.Unlock()
		if dup {
			return fmt.Errorf("partition request on channel %d, which is subscribed already: %w", f.Channel, credit.ErrViolation)
		}
		if c.reg == nil {
			c.sendError(f.Channel, "this TaskManager produces no partitions")
			return nil
		}
		c.reg.request(c, f.Channel, m)
	case wire.Error:
		msg := wire.DecodeError(f.Payload)
		if f.Channel == 0 {
			c.log.Warn("network: peer closes the connection", "peer", c.peer, "message", msg)
			c.fail(fmt.Errorf("peer %s: %q: %w", c.peer, msg, ErrConnClosed), false)
			return nil
		}
		if ic := c.input(f.Channel); ic != nil {
			ic.fail(fmt.Errorf("remote channel %d from %s: producer refused: %s: %w", f.Channel, c.peer, msg, ErrPartition), false)
			return nil
		}
		c.unknown.Add(1)
	default: // Hello, HelloOK after the handshake
		return fmt.Errorf("%s frame after the handshake: %w", f.Kind, credit.ErrViolation)
	}
	return nil
}

func (c *Conn) input(id uint32) *InputChannel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inputs[id]
}

func (c *Conn) output(id uint32) *OutChannel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outputs[id]
}

// signal wakes the writer.
func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// queueCtrl appends a control frame built by build for the writer.
func (c *Conn) queueCtrl(build func([]byte) []byte) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.ctrl = build(c.ctrl)
	c.mu.Unlock()
	c.signal()
}

// sendError queues an Error frame on a data channel.
func (c *Conn) sendError(id uint32, msg string) {
	c.queueCtrl(func(b []byte) []byte { return wire.AppendError(b, id, msg) })
}

// schedule puts oc on the writer's list; oc.mu is held and oc.sched was
// false.
func (c *Conn) schedule(oc *OutChannel) {
	c.mu.Lock()
	c.ready = append(c.ready, oc)
	c.mu.Unlock()
	c.signal()
}

// scheduleAnnounce puts ic on the writer's credit list; ic.mu is held.
func (c *Conn) scheduleAnnounce(ic *InputChannel) {
	c.mu.Lock()
	c.announce = append(c.announce, ic)
	c.mu.Unlock()
	c.signal()
}

// writeLoop runs until the connection fails, then writes the pending Error
// frame (bounded by closeGrace), closes the socket and waits for the reader.
func (c *Conn) writeLoop() {
	defer close(c.done)
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var (
		ctrl    []byte
		ann     []*InputChannel
		ready   []*OutChannel
		requeue []*OutChannel
		err     error
	)
	for err == nil {
		c.mu.Lock()
		for c.err == nil && len(c.ctrl) == 0 && len(c.announce) == 0 && len(c.ready) == 0 {
			if bw.Buffered() > 0 {
				c.mu.Unlock()
				if err = bw.Flush(); err != nil {
					c.mu.Lock()
					break
				}
				c.mu.Lock()
				continue
			}
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-c.failing:
			}
			c.mu.Lock()
		}
		if c.err != nil || err != nil {
			c.mu.Unlock()
			break
		}
		ctrl, c.ctrl = c.ctrl, ctrl[:0]
		ann, c.announce = c.announce, ann[:0]
		ready, c.ready = c.ready, ready[:0]
		c.mu.Unlock()

		if _, err = bw.Write(ctrl); err != nil {
			break
		}
		for i, ic := range ann {
			ann[i] = nil
			if n := ic.takeAnnounce(); n > 0 {
				if _, err = bw.Write(wire.AppendAddCredit(bw.AvailableBuffer(), ic.id, n)); err != nil {
					break
				}
			}
		}
		requeue = requeue[:0]
		for i, oc := range ready {
			ready[i] = nil
			if err != nil {
				break
			}
			var more bool
			more, err = oc.writeNext(bw, c.traffic)
			if more {
				requeue = append(requeue, oc)
			}
		}
		if len(requeue) > 0 {
			c.mu.Lock()
			c.ready = append(c.ready, requeue...)
			c.mu.Unlock()
			clear(requeue)
		}
	}
	if err != nil {
		c.fail(fmt.Errorf("write to %s: %v: %w", c.peer, err, ErrConnClosed), false)
	}
	c.mu.Lock()
	last := c.errFrame
	c.mu.Unlock()
	if last != nil && err == nil {
		// Drop what is buffered: after a protocol error only the Error
		// frame matters, and it must not wait behind a full buffer.
		bw.Reset(c.nc)
		_, _ = c.nc.Write(last)
	}
	_ = c.nc.Close()
	<-c.readDone
}

// addInput registers ic under a fresh id and queues its partition request.
func (c *Conn) addInput(ic *InputChannel, req wire.PartitionRequestMsg) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	if c.nextID == 0 {
		c.nextID = 1
	}
	ic.id = c.nextID
	c.inputs[ic.id] = ic
	c.ctrl = wire.AppendPartitionRequest(c.ctrl, ic.id, req)
	c.mu.Unlock()
	c.signal()
	return nil
}

// removeInput forgets ic; with cancel, the producer is told to drop the
// partition.
func (c *Conn) removeInput(ic *InputChannel, cancel bool) {
	c.mu.Lock()
	if c.inputs[ic.id] == ic {
		delete(c.inputs, ic.id)
		if cancel && c.err == nil {
			c.ctrl = wire.AppendCancelPartition(c.ctrl, ic.id)
		}
	}
	c.mu.Unlock()
	c.signal()
}

// addOutput subscribes oc under the peer's channel id. It fails if the
// connection failed.
func (c *Conn) addOutput(id uint32, oc *OutChannel) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.outputs[id] = oc
	return nil
}

// removeOutput forgets the subscription id if it is still oc's.
func (c *Conn) removeOutput(id uint32, oc *OutChannel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outputs[id] == oc {
		delete(c.outputs, id)
	}
}

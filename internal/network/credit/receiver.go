package credit

import "fmt"

// Receiver is the consumer side of one remote channel: it checks arriving
// frames against the sequence and the credit granted, and returns a credit
// for every buffer the consumer task frees.
type Receiver struct {
	credits     int // the channel's exclusive credits
	outstanding int // granted and announced, not yet used by an accepted Data
	held        int // accepted Data buffers the task has not freed
	unannounced int // freed buffers not yet returned by Announce
	next        uint64
	backlog     int
}

// NewReceiver returns a ledger for a channel that grants credits exclusive
// credits, the number sent in the PartitionRequest. It panics on credits
// below 1: a channel without credit could never carry data.
func NewReceiver(credits int) *Receiver {
	if credits < 1 {
		panic(fmt.Sprintf("credit: NewReceiver(%d): a channel needs at least one credit", credits))
	}
	return &Receiver{credits: credits, outstanding: credits}
}

// NewReceiverHeld is NewReceiver for a channel whose gate channel still
// holds held Data buffers of an earlier channel of the same input: they
// count as accepted and not freed, so the sender is granted credits-held
// now and the rest as the task frees them.
func NewReceiverHeld(credits, held int) *Receiver {
	r := NewReceiver(credits)
	if held < 0 || held >= credits {
		panic(fmt.Sprintf("credit: NewReceiverHeld(%d, %d): held must be non-negative and below the credits", credits, held))
	}
	r.outstanding -= held
	r.held = held
	return r
}

// Accept admits a frame with sequence number seq and the sender's backlog.
// A gap in the sequence or a Data frame beyond the granted credit is an
// error and changes nothing: the first (ErrOutOfSequence) means frames were
// lost or reordered and fails the channel, the second (ErrViolation) a
// peer that ignores flow control and closes the connection.
func (r *Receiver) Accept(seq uint64, isData bool, backlog int) error {
	if seq != r.next {
		return fmt.Errorf("frame %d, expected %d: %w", seq, r.next, ErrOutOfSequence)
	}
	if backlog < 0 {
		return violation("frame %d: negative backlog %d: the peer sent a malformed frame", seq, backlog)
	}
	if isData {
		if r.outstanding == 0 {
			return violation("frame %d: data without credit (%d buffers held): the peer ignores flow control", seq, r.held)
		}
		r.outstanding--
		r.held++
	}
	r.next++
	r.backlog = backlog
	return nil
}

// Freed records that the consumer task released one accepted Data buffer;
// its credit is returned by the next Announce. It panics when no buffer is
// held, a bookkeeping error of the caller.
func (r *Receiver) Freed() {
	if r.held == 0 {
		panic("credit: Receiver.Freed without a held buffer")
	}
	r.held--
	r.unannounced++
}

// Announce returns the credits freed since the last call, to be sent in
// one AddCredit frame (0: send nothing), and counts them as granted.
// Calling it once per poll round coalesces the frames.
func (r *Receiver) Announce() int {
	n := r.unannounced
	r.unannounced = 0
	r.outstanding += n
	return n
}

// Want returns the floating credits a sender backlog would justify: the
// buffers the sender has queued beyond the credits it holds or will get at
// the next Announce. Version 1 grants exclusive credits only and reports
// this as a metric.
func (r *Receiver) Want(backlog int) int {
	return max(0, backlog-r.outstanding-r.unannounced)
}

// Outstanding returns the credits announced to the sender and not yet used
// by an accepted Data frame: the sender's credit plus its Data in flight
// plus AddCredit frames in flight.
func (r *Receiver) Outstanding() int { return r.outstanding }

// Held returns the accepted Data buffers not yet freed.
func (r *Receiver) Held() int { return r.held }

// Unannounced returns the credits freed and not yet announced.
func (r *Receiver) Unannounced() int { return r.unannounced }

// Backlog returns the backlog stamped on the last accepted frame.
func (r *Receiver) Backlog() int { return r.backlog }

// Next returns the sequence number the next frame must carry.
func (r *Receiver) Next() uint64 { return r.next }

// Credits returns the channel's exclusive credits.
func (r *Receiver) Credits() int { return r.credits }

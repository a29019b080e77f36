package credit

import "fmt"

// Sender is the producer side of one remote channel: a queue of frame kinds
// (data or event) in send order, and the credit the receiver has granted.
// The caller keeps the frames themselves in a parallel FIFO.
type Sender struct {
	kinds      ring // true = Data, false = event, head first
	queueLimit int  // data buffers that may wait in the queue
	backlog    int  // data buffers in kinds
	credit     int  // Data frames that may be sent now
	maxCredit  int  // the most credit the receiver can ever grant
	sent       uint64
}

// NewSender returns a ledger that queues up to queueLimit data buffers and
// starts with credit credits, the channel's credits sent in the
// PartitionRequest. In version 1 the receiver grants exclusive credits only,
// so the sender can never hold more than credit: AddCredit past that is a
// protocol violation. It panics on a limit below 1 or a negative credit,
// both programming errors.
func NewSender(queueLimit, credit int) *Sender {
	if queueLimit < 1 || credit < 0 {
		panic(fmt.Sprintf("credit: NewSender(%d, %d): queue limit must be at least 1 and credit non-negative", queueLimit, credit))
	}
	return &Sender{queueLimit: queueLimit, credit: credit, maxCredit: credit}
}

// NewSenderHeld is NewSender for a channel whose receiver still holds
// held of its credit credits for buffers of an earlier channel: it starts
// with credit-held and may be granted up to credit.
func NewSenderHeld(queueLimit, credit, held int) *Sender {
	if held < 0 || held >= credit {
		panic(fmt.Sprintf("credit: NewSenderHeld(%d, %d, %d): held must be non-negative and below the credit", queueLimit, credit, held))
	}
	s := NewSender(queueLimit, credit)
	s.credit -= held
	return s
}

// Push queues a frame of the given kind. A data buffer is refused (false)
// when queueLimit data buffers already wait; the caller then blocks and
// counts a back-pressure wait. An event is always accepted: there are a few
// per checkpoint and they must never wait behind the accounting.
func (s *Sender) Push(isData bool) bool {
	if isData {
		if s.backlog >= s.queueLimit {
			return false
		}
		s.backlog++
	}
	s.kinds.push(isData)
	return true
}

// Pop takes the head frame if it may be sent now: an event always, a data
// buffer only against a credit, which it spends. ok is false when the queue
// is empty or its head is data without credit; events behind such data wait
// too, since frames of a channel stay in order. The frame's sequence number
// is Sent()-1 after a successful Pop, and Backlog() the backlog to stamp on
// it.
func (s *Sender) Pop() (isData, ok bool) {
	if s.kinds.len() == 0 {
		return false, false
	}
	isData = s.kinds.peek()
	if isData {
		if s.credit == 0 {
			return false, false
		}
		s.credit--
		s.backlog--
	}
	s.kinds.pop()
	s.sent++
	return isData, true
}

// AddCredit adds the n credits of an AddCredit frame. A non-positive n or a
// total beyond the channel's credits means the peer broke the protocol: the
// error wraps ErrViolation; the connection reader treats the frame as
// malformed.
func (s *Sender) AddCredit(n int) error {
	if n <= 0 {
		return violation("add credit %d: credit must be positive: the peer sent a malformed AddCredit", n)
	}
	if n > s.maxCredit-s.credit {
		return violation("add credit %d: sender holds %d of %d credits: the peer granted credits it does not have", n, s.credit, s.maxCredit)
	}
	s.credit += n
	return nil
}

// Backlog returns the data buffers queued and not yet sent, announced to
// the receiver with every frame.
func (s *Sender) Backlog() int { return s.backlog }

// Credit returns the Data frames that may be sent now.
func (s *Sender) Credit() int { return s.credit }

// Queued returns the frames queued, data and events.
func (s *Sender) Queued() int { return s.kinds.len() }

// Full reports whether Push would refuse a data buffer.
func (s *Sender) Full() bool { return s.backlog >= s.queueLimit }

// Sent returns the number of frames popped: the next frame's sequence
// number.
func (s *Sender) Sent() uint64 { return s.sent }

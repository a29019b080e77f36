// Package credit holds the pure ledgers of the remote data plane's
// credit-based flow control: one Sender per remote output channel on the
// producer's TaskManager, one Receiver per remote input channel on the
// consumer's. They count; they never block, read a socket or hold a buffer.
// The connection code keeps the buffers in queues beside them and asks the
// ledgers what it may do, like raft's tracker/inflights beside the log.
//
// A credit is one free receive buffer on the consumer for one Data frame.
// Events (barriers, cancel markers, end of partition) need none and are
// never held back by the ledger, so a barrier does not wait for credit.
// Version 1 grants exclusive credits only: the Receiver starts with the
// channel's credits (sent in PartitionRequest) and returns one per buffer
// the consumer task frees. Want computes the floating credit a backlog would
// justify, for metrics and a later version.
//
// Walkthrough of one channel with two credits:
//
//	s := credit.NewSender(4, 2)  // queue up to 4 data buffers, 2 credits
//	r := credit.NewReceiver(2)   // the consumer granted the same 2
//	s.Push(true); s.Push(true); s.Push(true); s.Push(false) // data, data, data, event
//	s.Pop()                      // data, seq 0: credit 1 left, backlog 2
//	s.Pop()                      // data, seq 1: credit 0
//	s.Pop()                      // ok == false: the head is data without credit
//	r.Accept(0, true, 2)         // the frames arrive; each held buffer uses a credit
//	r.Accept(1, true, 1)
//	r.Freed()                    // the task polled one buffer
//	n := r.Announce()            // 1: sent as AddCredit
//	s.AddCredit(n)               // the third data buffer may go, then the event
//
// Errors come in two classes: ErrOutOfSequence (a gap in a channel's
// sequence numbers; the channel's consumer fails) and ErrViolation (Data
// without credit, a bad AddCredit; the peer is broken and the connection
// closes, as after a malformed frame).
//
// Invariants, checked by the model test: no counter goes negative; data in
// flight plus data held by the receiver never exceeds the credit granted;
// the credits held by the sender, in flight as Data, held by the receiver,
// freed but unannounced and in flight as AddCredit always sum to the
// channel's credits.
//
// Owns: the arithmetic of credits. Must not touch: connections, goroutines
// or clocks (checked by internal/archtest).
package credit

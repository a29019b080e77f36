package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// splitReader reads one split's messages from a stream sequence on.
// Neither kind has redelivery timers: the ordered consumer acknowledges
// nothing (AckNone) and direct gets deliver nothing, so no ack_wait or
// max_ack_pending can stall or repeat a read.
type splitReader interface {
	// read hands up to max messages to f, in sequence order, waiting up to
	// wait for the first one. It returns the stream messages still pending
	// after the last one, or -1 when it does not know.
	read(ctx context.Context, max int, wait time.Duration, f func(*Msg) error) (pending int64, err error)
	close()
}

// orderedReader reads a split with an ordered consumer: ephemeral, flow
// controlled, recreated by the client at the next sequence after a gap or
// a server restart. For limits-retention streams.
type orderedReader struct {
	stream string
	cons   jetstream.Consumer
	it     jetstream.MessagesContext
	msg    Msg
}

func newOrderedReader(ctx context.Context, js jetstream.JetStream, stream, filter string, next uint64) (*orderedReader, error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	if next > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, next
	}
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("ordered consumer on stream %q from sequence %d: %w", stream, next, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("read stream %q from sequence %d: %w", stream, next, err)
	}
	return &orderedReader{stream: stream, cons: cons, it: it}, nil
}

func (r *orderedReader) read(ctx context.Context, max int, wait time.Duration, f func(*Msg) error) (int64, error) {
	return readIterator(ctx, r.it, r.stream, &r.msg, max, wait, f, nil)
}

// readIterator hands up to max messages of a consumer's iterator to f,
// through msg (reused), waiting up to wait for the first and only for
// what the iterator buffered after it, so a read returns to the task loop
// as soon as the stream is drained; seen, if set, is told of each message
// first. It returns the consumer's pending count after the last message
// (-1: none read).
func readIterator(ctx context.Context, it jetstream.MessagesContext, stream string, msg *Msg, max int, wait time.Duration, f func(*Msg) error, seen func(jetstream.Msg)) (int64, error) {
	pending := int64(-1)
	for n := 0; n < max; n++ {
		w := wait
		if n > 0 {
			w = time.Millisecond
		}
		if err := ctx.Err(); err != nil {
			return pending, err
		}
		m, err := it.Next(jetstream.NextMaxWait(w))
		if errors.Is(err, natsgo.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			return pending, nil
		}
		if err != nil {
			return pending, fmt.Errorf("read stream %q: %w", stream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return pending, fmt.Errorf("read stream %q: message metadata: %w", stream, err)
		}
		*msg = Msg{Stream: stream, Subject: m.Subject(), Sequence: md.Sequence.Stream, Time: md.Timestamp, Header: m.Headers(), Data: m.Data()}
		if seen != nil {
			seen(m)
		}
		pending = int64(md.NumPending)
		if err := f(msg); err != nil {
			return pending, err
		}
	}
	return pending, nil
}

func (r *orderedReader) close() { r.it.Stop() }

// directReader reads a split message by message with the stream's get
// API ("the first message at or after sequence s on subject filter"). It
// creates no consumer, which a work-queue stream would allow only with
// explicit acknowledgements and their redelivery timers.
type directReader struct {
	stream  string
	s       jetstream.Stream
	filter  string
	next    uint64
	msg     Msg
	idle    *time.Timer
	lastSeq func() uint64 // the stream's last sequence, for the lag
}

func newDirectReader(s jetstream.Stream, stream, filter string, next uint64) *directReader {
	if filter == "" {
		filter = ">"
	}
	if next == 0 {
		next = 1
	}
	return &directReader{stream: stream, s: s, filter: filter, next: next}
}

func (r *directReader) read(ctx context.Context, max int, wait time.Duration, f func(*Msg) error) (int64, error) {
	for n := 0; n < max; n++ {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := r.s.GetMsg(gctx, r.next, jetstream.WithGetMsgSubject(r.filter))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			if n == 0 {
				return r.pending(), r.wait(ctx, wait)
			}
			return r.pending(), nil
		}
		if err != nil {
			return -1, fmt.Errorf("get message of stream %q at or after sequence %d on %q: %w", r.stream, r.next, r.filter, err)
		}
		r.next = m.Sequence + 1
		r.msg = Msg{Stream: r.stream, Subject: m.Subject, Sequence: m.Sequence, Time: m.Time, Header: m.Header, Data: m.Data}
		if err := f(&r.msg); err != nil {
			return -1, err
		}
	}
	return r.pending(), nil
}

// pending is the stream's sequences after the reader's position, an upper
// bound of the split's lag (other subjects count too).
func (r *directReader) pending() int64 {
	if r.lastSeq == nil {
		return -1
	}
	last := r.lastSeq()
	if last < r.next {
		return 0
	}
	return int64(last - r.next + 1)
}

// wait sleeps up to d, for a drained split, so that the task loop does
// not spin on get requests.
func (r *directReader) wait(ctx context.Context, d time.Duration) error {
	if r.idle == nil {
		r.idle = time.NewTimer(d)
	} else {
		r.idle.Reset(d)
	}
	select {
	case <-r.idle.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *directReader) close() {
	if r.idle != nil {
		r.idle.Stop()
	}
}

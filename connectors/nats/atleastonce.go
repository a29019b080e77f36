package nats

import (
	"context"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// AtLeastOnce returns a factory of at-least-once NATS JetStream sinks for
// weir.SinkTo: messages are published at once (visible before their
// checkpoint completes), and every checkpoint barrier waits until the
// server acknowledged all of them, so a checkpoint never covers a message
// the stream has not stored. After a restore the messages since the
// checkpoint are published again: duplicates, never losses. No duplicate
// window is needed.
func AtLeastOnce[T any](url, stream string, serialize func(T, *natsgo.Msg) error, opts ...Option) func() weir.Sink[T] {
	o := apply(opts)
	return func() weir.Sink[T] {
		return &alSink[T]{url: url, stream: stream, serialize: serialize, o: o}
	}
}

type alSink[T any] struct {
	url       string
	stream    string
	serialize func(T, *natsgo.Msg) error
	o         options

	uid     string
	subject string
	nc      *natsgo.Conn
	js      jetstream.JetStream
	futures []jetstream.PubAckFuture // published since the last flush
	bad     *badrecords.Serialize
}

func (s *alSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	s.uid = rc.UID()
	bad, err := newSerializeErrors(s.o, s.uid, s.stream, rc.Subtask(), logger(rc.Logger()))
	if err != nil {
		return err
	}
	s.bad = bad
	nc, js, err := connect(ctx, s.url, "weir sink "+s.uid, s.o)
	if err != nil {
		return fmt.Errorf("nats sink %q: %w", s.uid, err)
	}
	_, info, err := streamInfo(ctx, js, s.stream)
	if err != nil {
		nc.Close()
		return fmt.Errorf("nats sink %q: %w", s.uid, err)
	}
	s.nc, s.js = nc, js
	s.subject = defaultSubject(s.o.subject, info.Config.Subjects)
	return nil
}

func (s *alSink[T]) Write(ctx context.Context, batch []T) error {
	for i, v := range batch {
		m := &natsgo.Msg{}
		if err := s.serialize(v, m); err != nil {
			if err := s.bad.Failed(i, len(batch), err); err != nil {
				return err
			}
			continue
		}
		if m.Subject == "" {
			m.Subject = s.subject
		}
		if m.Subject == "" {
			return weir.Unrecoverable(fmt.Errorf("nats sink %q: stream %q: the serializer left a message without a subject and the stream has no single plain subject: set msg.Subject in the serializer or pass nats.WithSubject: %w", s.uid, s.stream, errNoSubject))
		}
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("nats sink %q: publish to stream %q: %w", s.uid, s.stream, err)
		}
		s.futures = append(s.futures, f)
		if len(s.futures) >= 4*s.o.batchSize {
			// Bound what is in flight between checkpoints.
			if err := s.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush waits for the acknowledgement of every message published since
// the last flush; a server that stops answering fails the checkpoint
// after the publish timeout rather than holding the barrier.
func (s *alSink[T]) Flush(ctx context.Context) error {
	timer := time.NewTimer(s.o.pubTimeout)
	defer timer.Stop()
	for i, f := range s.futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			s.futures = s.futures[:0]
			return fmt.Errorf("nats sink %q: publish to stream %q: %w", s.uid, s.stream, err)
		case <-timer.C:
			s.futures = s.futures[:0]
			return fmt.Errorf("nats sink %q: stream %q acknowledged %d of %d messages within %v", s.uid, s.stream, i, len(s.futures), s.o.pubTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	clear(s.futures)
	s.futures = s.futures[:0]
	return nil
}

// Close waits for messages in flight (a clean end of a bounded job
// publishes everything), then closes the connection.
func (s *alSink[T]) Close(ctx context.Context) error {
	if s.nc == nil {
		return nil
	}
	err := s.Flush(ctx)
	s.nc.Close()
	s.nc = nil
	return err
}

package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// AtLeastOnce returns a factory of at-least-once Kafka sinks for
// weir.SinkTo: records go out through an idempotent producer, and every
// checkpoint barrier waits until all of them are acknowledged, so a
// checkpoint never covers a record the broker has not stored. After a
// restore the records since the checkpoint are written again
// (duplicates, never losses).
func AtLeastOnce[T any](brokers []string, topic string, serialize func(T, *kgo.Record) error, opts ...Option) func() weir.Sink[T] {
	o := apply(opts)
	return func() weir.Sink[T] {
		return &plainSink[T]{brokers: brokers, topic: topic, serialize: serialize, o: o, flush: true}
	}
}

// None returns a factory of Kafka sinks without a delivery guarantee for
// weir.SinkTo: checkpoints do not wait for acknowledgements, so records in
// flight at a crash may be lost. Produce errors still fail the job.
func None[T any](brokers []string, topic string, serialize func(T, *kgo.Record) error, opts ...Option) func() weir.Sink[T] {
	o := apply(opts)
	return func() weir.Sink[T] {
		return &plainSink[T]{brokers: brokers, topic: topic, serialize: serialize, o: o}
	}
}

type plainSink[T any] struct {
	brokers   []string
	topic     string
	serialize func(T, *kgo.Record) error
	o         options
	flush     bool

	uid string
	cl  *kgo.Client
	bad *badrecords.Serialize
	mu  sync.Mutex
	err error // first produce failure
}

func (s *plainSink[T]) Open(_ context.Context, rc *weir.RuntimeContext) error {
	s.uid = rc.UID()
	bad, err := newSerializeErrors(s.o, s.uid, s.topic, rc.Subtask(), rc.Logger())
	if err != nil {
		return err
	}
	s.bad = bad
	cl, err := kgo.NewClient(append(slices.Clone(s.o.clientOps), kgo.SeedBrokers(s.brokers...), kgo.DefaultProduceTopic(s.topic))...)
	if err != nil {
		return fmt.Errorf("kafka sink %q: producer: %w", s.uid, err)
	}
	s.cl = cl
	return nil
}

func (s *plainSink[T]) promise(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *plainSink[T]) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("kafka sink %q: produce to %q: %w", s.uid, s.topic, s.err)
	}
	return nil
}

func (s *plainSink[T]) Write(ctx context.Context, batch []T) error {
	if err := s.failure(); err != nil {
		return err
	}
	for i, v := range batch {
		r := &kgo.Record{}
		if err := s.serialize(v, r); err != nil {
			if err := s.bad.Failed(i, len(batch), err); err != nil {
				return err
			}
			continue
		}
		r.Topic = s.topic
		s.cl.Produce(ctx, r, s.promise)
	}
	return nil
}

func (s *plainSink[T]) Flush(ctx context.Context) error {
	if s.flush {
		// A broker that stops acknowledging fails the checkpoint after
		// requestTimeout instead of holding the task (and its barrier).
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if err := s.cl.Flush(ctx); err != nil {
			return fmt.Errorf("kafka sink %q: flush: %w", s.uid, err)
		}
	}
	return s.failure()
}

// Close waits for records in flight (a clean end of a bounded job writes
// everything), then closes the client. A cancelled task's ctx ends the
// wait at once: its records are replayed anyway.
func (s *plainSink[T]) Close(ctx context.Context) error {
	if s.cl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	err := s.cl.Flush(ctx)
	s.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka sink %q: flush at close: %w", s.uid, err)
	}
	return s.failure()
}

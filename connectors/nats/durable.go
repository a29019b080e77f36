package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// durableAckWait is the durable consumer's ack_wait. The source acks on
// checkpoint completion, so a long wait keeps redeliveries rare; a
// redelivered message lies below the split's position and is skipped, so
// a redelivery costs a message on the wire, never a duplicate record.
const durableAckWait = time.Hour

// durableReader reads a split of an interest-retention stream through a
// durable consumer, whose interest keeps the messages in the stream until
// the source acknowledges them, on the completion of a checkpoint that
// covers them (ack policy all: one ack covers every message before it).
//
// A restore must read from the checkpoint's position, but the durable has
// delivered beyond it; a consumer cannot be moved back, and deleting it
// first would let the server drop the messages no other consumer wants.
// So each opening creates a new durable at the position, and only then
// deletes the split's older ones: interest never lapses.
type durableReader struct {
	stream string
	cons   jetstream.Consumer
	it     jetstream.MessagesContext
	msg    Msg
	last   jetstream.Msg // the last message handed out: what an ack covers
}

// durablePrefix names a split's durables: "weir_<uid>_<split>_" with what
// consumer names cannot hold replaced by '_'.
func durablePrefix(uid, split string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '_'
		}, s)
	}
	return "weir_" + clean(uid) + "_" + clean(split) + "_"
}

func newDurableReader(ctx context.Context, s jetstream.Stream, stream, prefix, filter string, next uint64) (*durableReader, error) {
	var old []string
	names := s.ConsumerNames(ctx)
	for n := range names.Name() {
		if strings.HasPrefix(n, prefix) {
			old = append(old, n)
		}
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, fmt.Errorf("list consumers of stream %q: %w", stream, err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       prefix + hex.EncodeToString(suffix),
		Description:   "weir source: holds interest until a completed checkpoint covers the messages",
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       durableAckWait,
		MaxAckPending: -1,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: filter,
	}
	if next > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, next
	}
	cons, err := s.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("durable consumer %s on stream %q from sequence %d: %w", cfg.Durable, stream, next, err)
	}
	for _, n := range old {
		if err := s.DeleteConsumer(ctx, n); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("delete the older durable consumer %s of stream %q: %w", n, stream, err)
		}
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("read stream %q with consumer %s: %w", stream, cfg.Durable, err)
	}
	return &durableReader{stream: stream, cons: cons, it: it}, nil
}

func (r *durableReader) read(ctx context.Context, max int, wait time.Duration, f func(*Msg) error) (int64, error) {
	return readIterator(ctx, r.it, r.stream, &r.msg, max, wait, f, func(m jetstream.Msg) { r.last = m })
}

// ackable is the message whose ack covers everything read so far, nil
// before the first.
func (r *durableReader) ackable() jetstream.Msg { return r.last }

func (r *durableReader) close() { r.it.Stop() }

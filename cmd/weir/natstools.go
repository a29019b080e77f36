package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nats"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// natsAccountHeader carries the account produce-demo-events computed with
// its --keys, as the Kafka record key does.
const natsAccountHeader = "Weir-Account"

// natsJS connects to ep's server.
func natsJS(ep endpoint) (*natsgo.Conn, jetstream.JetStream, error) {
	nc, err := natsgo.Connect(ep.natsURL, natsgo.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w; is the NATS server (with JetStream) reachable?", ep.natsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// natsEnsureStream creates ep's stream if it is absent: file storage,
// the stream's name as its one subject, atomic batch publish allowed, and
// a duplicate window of at least dupWindow. An existing stream is left
// as it is (the exactly-once sink checks its window).
func natsEnsureStream(ctx context.Context, ep endpoint, dupWindow time.Duration) error {
	nc, js, err := natsJS(ep)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = js.Stream(ctx, ep.stream)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("look up stream %s on %s: %w", ep.stream, ep.natsURL, err)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:               ep.stream,
		Subjects:           []string{ep.stream},
		Storage:            jetstream.FileStorage,
		Duplicates:         max(dupWindow, 2*time.Minute),
		AllowAtomicPublish: true,
	})
	if err != nil {
		return fmt.Errorf("create stream %s on %s: %w", ep.stream, ep.natsURL, err)
	}
	return nil
}

// demoNatsEvents reads the demo's events from a stream filled by
// `weir tools produce-demo-events`: payload i, header Weir-Account the
// account. The whole stream is one split, read in sequence order, so
// each account's events arrive in index order.
func demoNatsEvents(env *weir.Env, ep endpoint, keys int64, bounded bool) weir.Stream[demo.Event] {
	gen := demo.Generator(keys)
	decode := func(m *nats.Msg) (demo.Event, error) {
		i, err := strconv.ParseInt(string(m.Data), 10, 64)
		if err != nil || i < 0 {
			return demo.Event{}, fmt.Errorf("message payload %q is not an event index", m.Data)
		}
		e := gen(i)
		if h := m.Header.Get(natsAccountHeader); h != "" {
			if a, err := strconv.ParseInt(h, 10, 64); err == nil && a != e.Account {
				return demo.Event{}, fmt.Errorf("event %d has account %d in the stream but %d with --keys %d: run the demo with the --keys that produce-demo-events used", i, a, e.Account, keys)
			}
		}
		return e, nil
	}
	var opts []nats.Option
	if bounded {
		opts = append(opts, nats.WithBounded())
	}
	return weir.FromSource(env, nats.Source(ep.natsURL, ep.stream, decode, opts...)).Name("events").UID("events")
}

// natsDemoSink adds the demo's exactly-once NATS sink: each output line
// is a message's payload.
func natsDemoSink(results weir.Stream[demo.Result], ep endpoint, cp checkpointTimes) {
	encode := func(r demo.Result, m *natsgo.Msg) error { m.Data = r.AppendLine(nil); return nil }
	weir.SinkToTransactional(results, nats.ExactlyOnce(ep.natsURL, ep.stream, encode,
		nats.WithCheckpointing(cp.interval, cp.timeout, cp.maxRestartDelay))).Name("nats").UID("nats")
}

// retryWindow is what the demo's sink stream must remember message ids
// for (nats.WithCheckpointing), with a minute to spare.
func (cp checkpointTimes) retryWindow() time.Duration {
	return cp.interval + cp.timeout + cp.maxRestartDelay + time.Minute
}

// produceNatsDemoEvents publishes events 0 … n-1 to ep's stream (created
// if absent): payload i, header Weir-Account its account.
func produceNatsDemoEvents(ctx context.Context, ep endpoint, n, k int64) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := natsEnsureStream(ctx, ep, 0); err != nil {
		return err
	}
	nc, js, err := natsJS(ep)
	if err != nil {
		return err
	}
	defer nc.Close()
	for i := int64(0); i < n; i++ {
		m := natsgo.NewMsg(ep.stream)
		m.Data = strconv.AppendInt(nil, i, 10)
		m.Header.Set(natsAccountHeader, strconv.FormatInt(demo.Account(i, k), 10))
		if _, err := js.PublishMsgAsync(m); err != nil {
			return fmt.Errorf("publish to %s: %w", ep.stream, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return fmt.Errorf("publish to %s: %d messages unacknowledged after a minute", ep.stream, js.PublishAsyncPending())
	}
	fmt.Printf("wrote %d demo events to stream %s\n", n, ep.stream)
	return nil
}

// readNatsLines returns the payloads of every message in ep's stream.
func readNatsLines(ctx context.Context, ep endpoint) ([]string, error) {
	nc, js, err := natsJS(ep)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	s, err := js.Stream(ctx, ep.stream)
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", ep.stream, err)
	}
	n := s.CachedInfo().State.Msgs
	lines := make([]string, 0, n)
	if n == 0 {
		return lines, nil
	}
	// An ordered consumer can stall on a loaded machine (a missed
	// heartbeat, a slow server); a stall is not the end of the stream:
	// read on with a new consumer from the next sequence, until no
	// message came for readStallLimit.
	var next uint64 = 1
	lastProgress := time.Now()
	for uint64(len(lines)) < n {
		got, last, err := readNatsFrom(ctx, s, next, n-uint64(len(lines)), func(data []byte) { lines = append(lines, string(data)) })
		if got > 0 {
			next, lastProgress = last+1, time.Now()
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil || time.Since(lastProgress) > readStallLimit {
			return nil, fmt.Errorf("read stream %s after %d of %d messages: %w", ep.stream, len(lines), n, err)
		}
	}
	return lines, nil
}

// readStallLimit is how long readNatsLines waits for the next message
// across consumers before it gives up.
const readStallLimit = time.Minute

// readNatsFrom reads up to max messages of stream s from sequence from
// with an ordered consumer, handing each payload to f, and returns how
// many it read and the stream sequence of the last; an error ends it
// early (a wait for the next message beyond 10 s is one).
func readNatsFrom(ctx context.Context, s jetstream.Stream, from, max uint64, f func([]byte)) (got, last uint64, err error) {
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return 0, 0, err
	}
	it, err := c.Messages()
	if err != nil {
		return 0, 0, err
	}
	defer it.Stop()
	for got < max {
		m, err := it.Next(jetstream.NextMaxWait(10 * time.Second))
		if err != nil {
			return got, last, err
		}
		md, err := m.Metadata()
		if err != nil {
			return got, last, err
		}
		f(m.Data())
		got, last = got+1, md.Sequence.Stream
	}
	return got, last, nil
}

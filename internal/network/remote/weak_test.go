package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
)

// An OutChannel is a weak producer's target (the runtime's weakTarget).
var _ interface {
	Send(ctx context.Context, b network.Buffer) error
	SendOverdraft(ctx context.Context, b network.Buffer, maxOverdraft int, d *network.Debt) error
	BackpressureWaits() uint64
	BackpressureTime() time.Duration
	Abandon()
} = (*OutChannel)(nil)

// weakCall is one call of a test's WeakHandler.
type weakCall struct {
	key      PartitionKey
	attempt  int
	from     wire.LogPos
	deadline time.Duration // ctx's deadline, from the call
	out      *OutChannel
}

// releases collects OnRelease calls.
type releases struct {
	mu  sync.Mutex
	got []wire.LogPos
}

func (r *releases) record(p wire.LogPos) {
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
}

func (r *releases) list() []wire.LogPos {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// weakProducer sets a WeakHandler on x that makes an OutChannel of
// credits per consumer attempt, with OnRelease feeding rel, and reports
// every call on the returned channel.
func weakProducer(t *testing.T, x *tm, credits int, rel *releases) <-chan weakCall {
	t.Helper()
	calls := make(chan weakCall, 16)
	x.mgr.Registry().SetWeakHandler(func(ctx context.Context, k PartitionKey, attempt int, from wire.LogPos) (*OutChannel, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("handler ctx without deadline")
		}
		o, err := NewOutChannel(OutChannelConfig{Key: k, Attempt: attempt, Codec: int64Codec{}, Credits: credits, OnRelease: rel.record})
		if err != nil {
			return nil, err
		}
		calls <- weakCall{key: k, attempt: attempt, from: from, deadline: time.Until(dl), out: o}
		return o, nil
	})
	return calls
}

func nextCall(t *testing.T, calls <-chan weakCall) weakCall {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the weak handler was not called")
		return weakCall{}
	}
}

// sendBatch sends one batch of records stamped with log position pos.
func sendBatch(ctx context.Context, o *OutChannel, pool *network.Pool[int64], pos wire.LogPos, records ...int64) error {
	bt := pool.Get()
	bt.Records = append(bt.Records, records...)
	return o.Send(ctx, network.Buffer{Kind: network.Data, Data: bt, LogBuffers: pos.Buffers, LogRecords: pos.Records})
}

// nextBuffer polls g for its next buffer, decoding a Data buffer's records.
func nextBuffer(t *testing.T, g *network.Gate) (network.Buffer, []int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if _, b, ok := g.Poll(); ok {
			if b.Kind != network.Data {
				return b, nil
			}
			s := b.Data.(*network.Serialized)
			vs, err := decodeInt64s(nil, s.Bytes)
			s.Release()
			if err != nil {
				t.Fatal(err)
			}
			return b, vs
		}
		select {
		case <-g.Ready():
		case <-deadline:
			t.Fatal("nothing arrived in the gate")
		}
	}
}

// TestWeakChannel: a weak request reaches the producer's handler with the
// partition, the consumer's attempt and the replay position; the channel
// it makes is bound, and buffers sent with log positions arrive in the
// consumer's gate with them (buffers without one without); the consumer's
// Releases reach OnRelease in order.
func TestWeakChannel(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	rel := &releases{}
	calls := weakProducer(t, a, 4, rel)

	g := network.NewGate(1, 4)
	fails := newFailures()
	from := wire.LogPos{Buffers: 17, Records: 1700}
	ic, err := cb.OpenInput(InputConfig{Key: key(2, 1), Attempt: 3, Weak: true, From: from, Gate: g, Channel: 0, OnFailure: fails.record})
	if err != nil {
		t.Fatal(err)
	}
	call := nextCall(t, calls)
	if call.key != key(2, 1) || call.attempt != 3 || call.from != from {
		t.Fatalf("handler called with %s attempt %d from %+v; want %s attempt 3 from %+v", call.key, call.attempt, call.from, key(2, 1), from)
	}
	if call.deadline <= 0 || call.deadline > 5*time.Second {
		t.Fatalf("handler ctx deadline in %v, want within the connect timeout (5s)", call.deadline)
	}
	o := call.out
	eventually(t, "the weak channel to be bound", func() bool { return o.Stats().Bound })

	pool := network.NewPool[int64](4)
	type sent struct {
		kind network.Kind
		pos  wire.LogPos
		recs []int64
	}
	script := []sent{
		{network.Data, wire.LogPos{Buffers: 18, Records: 1702}, []int64{1, 2}},
		{network.Watermark, wire.LogPos{Buffers: 19, Records: 1702}, nil},
		{network.Data, wire.LogPos{}, []int64{3}}, // not logged: no position
		{network.Data, wire.LogPos{Buffers: 20, Records: 1705}, []int64{4, 5, 6}},
		{network.WatermarkStatus, wire.LogPos{Buffers: 21, Records: 1705}, nil},
		{network.EndOfData, wire.LogPos{}, nil},
	}
	go func() {
		for _, s := range script {
			var err error
			if s.kind == network.Data {
				err = sendBatch(ctx, o, pool, s.pos, s.recs...)
			} else {
				err = o.Send(ctx, network.Buffer{Kind: s.kind, Watermark: 99, Idle: true, LogBuffers: s.pos.Buffers, LogRecords: s.pos.Records})
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i, s := range script {
		buf, recs := nextBuffer(t, g)
		got := wire.LogPos{Buffers: buf.LogBuffers, Records: buf.LogRecords}
		if buf.Kind != s.kind || got != s.pos || !slices.Equal(recs, s.recs) {
			t.Fatalf("buffer %d: %s %v at %+v, want %s %v at %+v", i, buf.Kind, recs, got, s.kind, s.recs, s.pos)
		}
	}

	want := []wire.LogPos{{Buffers: 18, Records: 1702}, {Buffers: 20, Records: 1705}, {Buffers: 21, Records: 1705}}
	for _, p := range want {
		ic.Release(p)
	}
	eventually(t, "the releases to arrive", func() bool { return len(rel.list()) == len(want) })
	if got := rel.list(); !slices.Equal(got, want) {
		t.Fatalf("OnRelease got %v, want %v in order", got, want)
	}

	if err := o.Send(ctx, network.Buffer{Kind: network.EndOfPartition}); err != nil {
		t.Fatal(err)
	}
	if buf, _ := nextBuffer(t, g); buf.Kind != network.EndOfPartition {
		t.Fatalf("got %s, want end of partition", buf.Kind)
	}
	// The channel ended: a Release is a no-op at the consumer, and one
	// the producer gets for a channel that is gone is dropped.
	ic.Release(wire.LogPos{Buffers: 22, Records: 1705})
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}
	if len(rel.list()) != len(want) {
		t.Fatalf("a release after the end reached OnRelease: %v", rel.list())
	}
}

// TestWeakNewerAttemptSupersedes: a request of a newer consumer attempt
// gets a channel of its own, which replaces the older attempt's: that one
// fails, and a Send waiting on it for credit returns an error wrapping
// network.ErrConsumerGone. A request of an attempt older than the one
// registered is refused.
func TestWeakNewerAttemptSupersedes(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	calls := weakProducer(t, a, 1, &releases{})
	pool := network.NewPool[int64](4)
	fails := newFailures()

	g1 := network.NewGate(1, 1)
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, Gate: g1, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	o1 := nextCall(t, calls).out
	eventually(t, "attempt 1 to be bound", func() bool { return o1.Stats().Bound })
	// Attempt 1 polls nothing: its credit and queue fill, the next Send
	// waits.
	for i := range 2 {
		if err := sendBatch(ctx, o1, pool, wire.LogPos{Buffers: uint64(i) + 1, Records: uint64(i) + 1}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	waits := o1.BackpressureWaits()
	waiting := make(chan error, 1)
	go func() { waiting <- sendBatch(ctx, o1, pool, wire.LogPos{Buffers: 3, Records: 3}, 2) }()
	eventually(t, "the send to attempt 1 to wait", func() bool { return o1.BackpressureWaits() > waits })

	g2 := network.NewGate(1, 1)
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Attempt: 2, Weak: true, From: wire.LogPos{Buffers: 1, Records: 1}, Gate: g2, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	call := nextCall(t, calls)
	if call.attempt != 2 || call.from != (wire.LogPos{Buffers: 1, Records: 1}) {
		t.Fatalf("second call: attempt %d from %+v", call.attempt, call.from)
	}
	o2 := call.out
	var err error
	select {
	case err = <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the send waiting on the superseded attempt did not return")
	}
	if !errors.Is(err, network.ErrConsumerGone) || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "superseded by consumer attempt 2") {
		t.Fatalf("waiting send on attempt 1: %v, want superseded, wrapping ErrConsumerGone and ErrClosed", err)
	}
	if err := sendBatch(ctx, o1, pool, wire.LogPos{Buffers: 4, Records: 4}, 3); !errors.Is(err, network.ErrConsumerGone) {
		t.Fatalf("later send on attempt 1: %v, want ErrConsumerGone", err)
	}
	// Attempt 1's consumer is told (it is normally gone already).
	if err := fails.wait(t); !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("attempt 1's input failed with %v", err)
	}

	// Attempt 2 gets what is sent to it.
	eventually(t, "attempt 2 to be bound", func() bool { return o2.Stats().Bound })
	if err := sendBatch(ctx, o2, pool, wire.LogPos{Buffers: 2, Records: 2}, 42); err != nil {
		t.Fatal(err)
	}
	if buf, recs := nextBuffer(t, g2); !slices.Equal(recs, []int64{42}) || buf.LogBuffers != 2 {
		t.Fatalf("attempt 2 got %v at %d", recs, buf.LogBuffers)
	}

	// A request of attempt 1 again is older than the registered 2.
	g3 := network.NewGate(1, 1)
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, Gate: g3, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	if err := fails.wait(t); !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "consumer attempt 1 was superseded by consumer attempt 2") {
		t.Fatalf("stale attempt's input failed with %v", err)
	}
	select {
	case c := <-calls:
		t.Fatalf("the handler was called for a stale attempt %d", c.attempt)
	default:
	}
	if !o2.Stats().Bound || fails.count() != 2 {
		t.Fatalf("attempt 2 disturbed: bound %v, failures %v", o2.Stats().Bound, fails.errs)
	}
	o2.Close()
}

// TestWeakGoneDuringSlowHandler: a consumer that cancels, or whose
// connection fails, while the handler still runs ends the handler's ctx,
// and the channel the handler returns anyway is closed, not bound or left
// registered.
func TestWeakGoneDuringSlowHandler(t *testing.T) {
	for _, how := range []string{"cancel", "connection failure"} {
		t.Run(how, func(t *testing.T) {
			a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
			ca, cb := connect(t, a, b)
			entered := make(chan struct{})
			returned := make(chan *OutChannel, 1)
			a.mgr.Registry().SetWeakHandler(func(ctx context.Context, k PartitionKey, attempt int, _ wire.LogPos) (*OutChannel, error) {
				close(entered)
				<-ctx.Done()
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return nil, fmt.Errorf("ctx ran out instead of being cancelled: %w", ctx.Err())
				}
				// Return a channel anyway, as a handler that was already
				// done would.
				o, err := NewOutChannel(OutChannelConfig{Key: k, Attempt: attempt, Codec: int64Codec{}, Credits: 2})
				returned <- o
				return o, err
			})
			g := network.NewGate(1, 2)
			ic, err := cb.OpenInput(InputConfig{Key: key(0, 0), Attempt: 1, Weak: true, Gate: g, Channel: 0})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler was not called")
			}
			if how == "cancel" {
				ic.Close()
			} else {
				_ = cb.Close()
			}
			var o *OutChannel
			select {
			case o = <-returned:
			case <-time.After(4 * time.Second): // before the 5s connect timeout
				t.Fatal("the handler's ctx was not cancelled")
			}
			eventually(t, "the returned channel to be closed", func() bool {
				return o.Send(context.Background(), network.Buffer{Kind: network.Watermark}) != nil
			})
			err = o.Send(context.Background(), network.Buffer{Kind: network.Watermark})
			if !errors.Is(err, network.ErrConsumerGone) || o.Stats().Bound {
				t.Fatalf("returned channel: send %v, bound %v; want closed and unbound", err, o.Stats().Bound)
			}
			reg := a.mgr.Registry()
			reg.mu.Lock()
			parts, reqs := len(reg.parts), len(reg.weakReqs)
			reg.mu.Unlock()
			ca.mu.Lock()
			outs := len(ca.outputs)
			ca.mu.Unlock()
			if parts != 0 || reqs != 0 || outs != 0 {
				t.Fatalf("left behind: %d registered channels, %d weak requests, %d bound outputs", parts, reqs, outs)
			}
		})
	}
}

// TestWeakRequestRefused: a handler's error, a missing handler and a
// handler returning the wrong attempt each fail the consumer's input with
// ErrPartition, naming the partition and the reason.
func TestWeakRequestRefused(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	fails := newFailures()
	open := func(attempt int) {
		t.Helper()
		g := network.NewGate(1, 2)
		if _, err := cb.OpenInput(InputConfig{Key: key(4, 2), Attempt: attempt, Weak: true, Gate: g, Channel: 0, OnFailure: fails.record}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(parts ...string) {
		t.Helper()
		err := fails.wait(t)
		if !errors.Is(err, ErrPartition) {
			t.Fatalf("input failed with %v, want ErrPartition", err)
		}
		for _, p := range append(parts, key(4, 2).String()) {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("input failed with %q, want it to name %q", err, p)
			}
		}
	}

	open(1)
	expect("no weak handler")

	wrong := make(chan *OutChannel, 1)
	a.mgr.Registry().SetWeakHandler(func(ctx context.Context, k PartitionKey, attempt int, _ wire.LogPos) (*OutChannel, error) {
		if attempt == 2 {
			return nil, errors.New("job demo is not deployed on tm-a")
		}
		o, err := NewOutChannel(OutChannelConfig{Key: k, Attempt: attempt + 1, Codec: int64Codec{}, Credits: 2})
		wrong <- o
		return o, err
	})
	open(2)
	expect("consumer attempt 2", "job demo is not deployed on tm-a")
	open(3)
	expect("returned a channel for", "attempt 4")
	if err := (<-wrong).Send(context.Background(), network.Buffer{Kind: network.Watermark}); !errors.Is(err, network.ErrConsumerGone) {
		t.Fatalf("the mismatched channel was not closed: %v", err)
	}

	if _, err := cb.OpenInput(InputConfig{Key: key(4, 2), Gate: network.NewGate(1, 1), From: wire.LogPos{Buffers: 1}}); err == nil || !strings.Contains(err.Error(), "without Weak") {
		t.Fatalf("a replay position without Weak: %v", err)
	}
}

// TestOutChannelErrorsAreConsumerGone: every way an OutChannel fails makes
// its Send return an error wrapping network.ErrConsumerGone as well as the
// reason; a Send that gives up because its own ctx ended does not.
func TestOutChannelErrorsAreConsumerGone(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	ctx := context.Background()
	pool := network.NewPool[int64](4)
	for i, tc := range []struct {
		name   string
		end    func(o *OutChannel, ic *InputChannel, cb *Conn)
		reason error
	}{
		{"close", func(o *OutChannel, _ *InputChannel, _ *Conn) { o.Close() }, ErrClosed},
		{"abandon", func(o *OutChannel, _ *InputChannel, _ *Conn) { o.Abandon() }, ErrClosed},
		{"consumer cancels", func(_ *OutChannel, ic *InputChannel, _ *Conn) { ic.Close() }, ErrCancelled},
		{"connection fails", func(_ *OutChannel, _ *InputChannel, cb *Conn) { _ = cb.Close() }, ErrConnClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cb := connect(t, a, b)
			o := outChannel(t, a, i, 0, 1)
			ic, err := cb.OpenInput(InputConfig{Key: key(i, 0), Gate: network.NewGate(1, 1), Channel: 0})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the channel to be bound", func() bool { return o.Stats().Bound })
			for j := range 2 { // the consumer's credit and the queue
				if err := sendBatch(ctx, o, pool, wire.LogPos{}, int64(j)); err != nil {
					t.Fatal(err)
				}
			}
			// A Send whose ctx ends is not told the consumer is gone.
			cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			err = sendBatch(cctx, o, pool, wire.LogPos{}, 9)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, network.ErrConsumerGone) {
				t.Fatalf("send with an ended ctx: %v, want the ctx's error alone", err)
			}
			waits := o.BackpressureWaits()
			waiting := make(chan error, 1)
			go func() { waiting <- sendBatch(ctx, o, pool, wire.LogPos{}, 10) }()
			eventually(t, "the send to wait", func() bool { return o.BackpressureWaits() > waits })
			tc.end(o, ic, cb)
			select {
			case err = <-waiting:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting send did not return")
			}
			if !errors.Is(err, network.ErrConsumerGone) || !errors.Is(err, tc.reason) {
				t.Fatalf("waiting send: %v, want ErrConsumerGone and %v", err, tc.reason)
			}
			if err := o.Send(ctx, network.Buffer{Kind: network.EndOfPartition}); !errors.Is(err, network.ErrConsumerGone) || !errors.Is(err, tc.reason) {
				t.Fatalf("later event send: %v, want ErrConsumerGone and %v", err, tc.reason)
			}
			ic.Close()
			o.Close()
		})
	}
}

// TestReleaseForUnknownChannel: a Release for a channel the producer does
// not have (it just ended) is dropped and counted, and the connection
// stays up.
func TestReleaseForUnknownChannel(t *testing.T) {
	b := newTM(t, "tm-b")
	nc := rawDial(t, b)
	_, _ = nc.Write(wire.AppendHello(nil, wire.Hello, wire.HelloMsg{From: "tm-0", To: "tm-b", BuildID: "test-build"}))
	rd := wire.NewReader(nc, 0)
	if f, err := rd.Next(); err != nil || f.Kind != wire.HelloOK {
		t.Fatalf("handshake: %v %v", f.Kind, err)
	}
	cb, err := b.mgr.Conn(context.Background(), "tm-0", "unused")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = nc.Write(wire.AppendRelease(nil, 42, wire.LogPos{Buffers: 3, Records: 30}))
	eventually(t, "the release to be counted", func() bool { return cb.UnknownFrames() == 1 })
	if err := cb.Err(); err != nil {
		t.Fatalf("connection failed: %v", err)
	}
}

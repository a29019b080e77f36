package nats

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir/internal/codec"
)

// TestCommitIdempotent commits a transaction of 20 messages in batches of
// 7, then commits a copy of its handle decoded from the checkpoint codec
// (what a restore does) from a second sink instance, with atomic batches
// and one by one: the stream holds each message once, with the ids the
// handle names.
func TestCommitIdempotent(t *testing.T) {
	ts := newServer(t)
	_, js := ts.js(t)
	c, err := codec.For[*Txn]()
	if err != nil {
		t.Fatal(err)
	}
	for _, atomicBatches := range []bool{true, false} {
		t.Run(fmt.Sprint("atomic=", atomicBatches), func(t *testing.T) {
			stream := fmt.Sprintf("ID%v", atomicBatches)
			outStream(t, js, stream, atomicBatches)
			ctx := context.Background()
			newSink := func() *eoSink[int] {
				s := ExactlyOnce(ts.url, stream, func(v int, m *natsgo.Msg) error { m.Data = fmt.Appendf(nil, "v%02d", v); return nil }, WithBatchSize(7))().(*eoSink[int])
				if err := s.open(ctx, "job", "op", 3, nil, nil); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close(ctx) })
				return s
			}
			a := newSink()
			txn, _ := a.Begin(ctx)
			var vals []int
			for i := range 20 {
				vals = append(vals, i)
			}
			if err := a.Write(ctx, txn, vals); err != nil {
				t.Fatal(err)
			}
			if err := a.PreCommit(ctx, txn); err != nil {
				t.Fatal(err)
			}
			saved := c.Append(nil, txn) // into the checkpoint
			if !strings.HasPrefix(txn.ID, "job/op/3/") {
				t.Fatalf("transaction id %q does not name job, operator and subtask", txn.ID)
			}
			if err := a.Commit(ctx, txn); err != nil {
				t.Fatal(err)
			}
			if a.buffered != 0 {
				t.Errorf("%d bytes still buffered after the commit", a.buffered)
			}
			restored, _, err := c.Decode(saved)
			if err != nil {
				t.Fatal(err)
			}
			b := newSink()
			if err := b.Commit(ctx, restored); err != nil {
				t.Fatalf("second commit: %v", err)
			}
			got := readAll(t, js, stream)
			if len(got) != 20 || got[0] != "v00" || got[19] != "v19" {
				t.Fatalf("stream holds %d messages %q, want v00..v19 once", len(got), got)
			}
			s, err := js.Stream(ctx, stream)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.GetMsg(ctx, 20)
			if err != nil {
				t.Fatal(err)
			}
			if id := m.Header.Get(jetstream.MsgIDHeader); id != txn.ID+"/19" {
				t.Errorf("message 20 has id %q, want %q", id, txn.ID+"/19")
			}
			if a.pub.atomic != atomicBatches || b.pub.atomic != atomicBatches {
				t.Errorf("sinks publish with atomic batches: %v, %v; want %v", a.pub.atomic, b.pub.atomic, atomicBatches)
			}
		})
	}
}

// TestBatchTooLarge: a server whose max_batch_size is below
// nats.WithBatchSize refuses the commit, and the sink fails for good
// naming the option, rather than restart into the same refusal.
func TestBatchTooLarge(t *testing.T) {
	ts := newServerWith(t, func(o *server.Options) { o.JetStreamLimits.MaxBatchSize = 5 })
	_, js := ts.js(t)
	outStream(t, js, "TL", true)
	ctx := context.Background()
	s := ExactlyOnce(ts.url, "TL", func(v int, m *natsgo.Msg) error { m.Data = fmt.Appendf(nil, "%d", v); return nil }, WithBatchSize(10))().(*eoSink[int])
	if err := s.open(ctx, "job", "op", 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	txn, _ := s.Begin(ctx)
	if err := s.Write(ctx, txn, []int{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(ctx, txn)
	if err == nil || !strings.Contains(err.Error(), "nats.WithBatchSize") || !strings.Contains(err.Error(), `"TL"`) {
		t.Fatalf("Commit = %v, want a refusal naming the stream and nats.WithBatchSize", err)
	}
}

// TestHelpers covers the small pure helpers.
func TestHelpers(t *testing.T) {
	if got := durablePrefix("my.uid/x", "orders.*"); got != "weir_my_uid_x_orders___" {
		t.Errorf("durablePrefix = %q", got)
	}
	for _, c := range []struct {
		opt  string
		subs []string
		want string
	}{
		{"", []string{"out"}, "out"},
		{"", []string{"out.>"}, ""},
		{"", []string{"a", "b"}, ""},
		{"x", []string{"a", "b"}, "x"},
	} {
		if got := defaultSubject(c.opt, c.subs); got != c.want {
			t.Errorf("defaultSubject(%q, %q) = %q, want %q", c.opt, c.subs, got, c.want)
		}
	}
	o := apply([]Option{WithCheckpointing(time.Second, time.Minute, 10*time.Second)})
	if err := checkDuplicateWindow("S", 71*time.Second, o); err != nil {
		t.Errorf("a window of 71 s refused for a retry window of 71 s: %v", err)
	}
	if err := checkDuplicateWindow("S", 70*time.Second, o); err == nil || !strings.Contains(err.Error(), `"S"`) || !strings.Contains(err.Error(), "1m10s") || !strings.Contains(err.Error(), "1m11s") {
		t.Errorf("a window of 70 s: %v, want a refusal naming the stream and both durations", err)
	}
	snaps := []snapshot{{id: 1}, {id: 2}, {id: 4}}
	if got := dropThrough(snaps, 2); len(got) != 1 || got[0].id != 4 {
		t.Errorf("dropThrough = %v", got)
	}
}

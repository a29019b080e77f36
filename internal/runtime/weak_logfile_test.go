package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/weak"
)

// intCodec encodes batches of ints: a uvarint count, then zigzag varints.
type intCodec struct{ pool *network.Pool[int] }

func (c intCodec) AppendBatch(dst []byte, data any) []byte {
	b := data.(*network.Batch[int])
	dst = binary.AppendUvarint(dst, uint64(len(b.Records)))
	for _, r := range b.Records {
		dst = binary.AppendVarint(dst, int64(r))
	}
	return dst
}

func (c intCodec) DecodeBatch(src []byte) (any, int, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return nil, 0, fmt.Errorf("count: corrupt")
	}
	b := c.pool.Get()
	off := k
	for range n {
		v, k := binary.Varint(src[off:])
		if k <= 0 {
			return nil, 0, fmt.Errorf("record: corrupt")
		}
		b.Records = append(b.Records, int(v))
		off += k
	}
	return b, off, nil
}

func (c intCodec) Records(data any) int { return len(data.(*network.Batch[int]).Records) }

// TestWeakLogFileRoundTrip: what a producer's snapshot stores of its
// output logs (retained batches and events with their positions) reads
// back as the same entries, and a sender resumed from it replays them to a
// consumer that restarts from before them, then leaves a hole where the
// lost log's rest was.
func TestWeakLogFileRoundTrip(t *testing.T) {
	pool := network.NewPool[int](8)
	codec := intCodec{pool: pool}
	st := &WeakStats{}
	s := newWeakSender(1000, st)
	s.setCodec(codec)
	g := network.NewGate(1, 64)
	s.connect(g.Channel(0))
	sendRange(t, s, pool, 0, 10, 4) // entries 1..3: 4, 4, 2 records
	if err := s.Send(context.Background(), network.Buffer{Kind: network.Watermark, Watermark: 77}); err != nil {
		t.Fatal(err)
	}
	sendRange(t, s, pool, 10, 13, 4) // entry 5: 3 records
	c := &weakConsumer{g: g}
	c.pollAll(t, 13)
	if err := s.truncate(weak.Position{Buffers: 1, Records: 4}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	data, err := s.appendLogLocked(nil, 2, 1)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := readLogs(bytes.NewReader(data), func(k int) (ChannelCodec, error) {
		if k != 2 {
			return nil, fmt.Errorf("edge %d", k)
		}
		return intCodec{pool: network.NewPool[int](8)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rl := logs[[2]int{2, 1}]
	if rl == nil || len(logs) != 1 {
		t.Fatalf("read %v, want the log of edge 2 to subtask 1", logs)
	}
	if rl.base != (weak.Position{Buffers: 1, Records: 4}) {
		t.Errorf("base %s, want 1/4", rl.base)
	}
	want := []weak.Entry{{Records: 4}, {Records: 2}, {Event: weak.EventOther}, {Records: 3}}
	if !slices.Equal(rl.entries, want) {
		t.Errorf("entries %v, want %v", rl.entries, want)
	}
	if rl.payloads[2].Kind != network.Watermark || rl.payloads[2].Watermark != 77 {
		t.Errorf("payload 3 %+v, want the watermark 77", rl.payloads[2])
	}

	// The producer's process is lost: a new sender resumes from the
	// file; the consumer restarts from its snapshot at 1/4.
	s2 := newWeakSender(1000, &WeakStats{})
	s2.setCodec(codec)
	g2 := network.NewGate(1, 64)
	if _, err := s2.reconnect(context.Background(), g2.Channel(0), weak.Position{Buffers: 1, Records: 4}, func(err error) {
		if err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s2.resumeWith(rl, 13, true); !ok || err != nil {
		t.Fatalf("resumeWith: %v, %v", ok, err)
	}
	sendRange(t, s2, pool, 13, 15, 4) // new records after the restored ones
	c2 := &weakConsumer{g: g2}
	var positions []string
	deadline := 0
	for len(c2.got) < 11 && deadline < 1_000_000 {
		deadline++
		_, b, ok := g2.Poll()
		if !ok {
			continue
		}
		positions = append(positions, fmt.Sprintf("%d/%d", b.LogBuffers, b.LogRecords))
		if b.Kind == network.Data {
			c2.got = append(c2.got, b.Data.(*network.Batch[int]).Records...)
		}
	}
	if wantGot := []int{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}; !slices.Equal(c2.got, wantGot) {
		t.Errorf("restarted consumer read %v, want %v", c2.got, wantGot)
	}
	// Entries 2..5 restored, 6 stands for the lost log's rest (not sent),
	// 7 is new: the consumer sees the hole.
	if got := strings.Join(positions, " "); got != "2/8 3/10 4/10 5/13 7/15" {
		t.Errorf("positions %s, want 2/8 3/10 4/10 5/13 7/15", got)
	}
}

// TestWeakLogFileCorrupt: a truncated or garbled file is an error naming
// what is wrong, never a silent short log.
func TestWeakLogFileCorrupt(t *testing.T) {
	pool := network.NewPool[int](8)
	s := newWeakSender(1000, &WeakStats{})
	s.setCodec(intCodec{pool: pool})
	g := network.NewGate(1, 64)
	s.connect(g.Channel(0))
	sendRange(t, s, pool, 0, 10, 4)
	s.mu.Lock()
	data, err := s.appendLogLocked(nil, 0, 0)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	codec := func(int) (ChannelCodec, error) { return intCodec{pool: pool}, nil }
	for cut := 1; cut < len(data); cut++ {
		if _, err := readLogs(bytes.NewReader(data[:cut]), codec); err == nil {
			t.Errorf("file cut at %d of %d bytes read without an error", cut, len(data))
		}
	}
	bad := slices.Clone(data)
	bad[5] = 9 // the first entry's kind
	if _, err := readLogs(bytes.NewReader(bad), codec); err == nil || !strings.Contains(err.Error(), "corrupt output log") {
		t.Errorf("garbled kind: %v, want a corrupt output log error", err)
	}
}

// BenchmarkWeakSnapshotLogs measures what a producer's snapshot adds in
// WEAKLY_CONSISTENT mode: encoding what its output log retains, on the
// task goroutine, per retained record (the log holds one snapshot
// interval of output when consumers keep up).
//
//	go test ./internal/runtime -run XXX -bench WeakSnapshotLogs -benchmem
func BenchmarkWeakSnapshotLogs(b *testing.B) {
	for _, held := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", held), func(b *testing.B) {
			pool := network.NewPool[int](1024)
			s := newWeakSender(held, &WeakStats{})
			s.setCodec(intCodec{pool: pool})
			g := network.NewGate(1, 1<<20)
			s.connect(g.Channel(0))
			for i := 0; i < held; i += 1024 {
				bt := pool.Get()
				for j := range min(1024, held-i) {
					bt.Records = append(bt.Records, i+j)
				}
				if err := s.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: bt}, 1<<20, nil); err != nil {
					b.Fatal(err)
				}
			}
			w := &weakTask{outs: [][]*weakSender{{s}}}
			b.ReportAllocs()
			var n int
			for b.Loop() {
				data, err := w.snapshotLogs()
				if err != nil {
					b.Fatal(err)
				}
				n = len(data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(held), "ns/record")
			b.ReportMetric(float64(n)/float64(held), "bytes/record")
		})
	}
}

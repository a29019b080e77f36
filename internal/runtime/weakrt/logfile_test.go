package weakrt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/jobstatus"
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

func (intCodec) KeepKeyGroups(any, any, int, func(int) bool) (any, int, error) {
	panic("not used")
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
func (c intCodec) Schema() []byte       { return testSchema[int]() }

// logFileOf is what a snapshot stores of s's log as channel (k, j).
func logFileOf(t testing.TB, s *weakSender, k, j int) []byte {
	t.Helper()
	snap := &logSnapshot{}
	s.mu.Lock()
	err := s.appendLogLocked(snap, k, j)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return snap.bytes()
}

// TestWeakLogFileRoundTrip: what a producer's snapshot stores of its
// output logs (retained batches and events with their positions) reads
// back as the same entries, and a sender resumed from it replays them to a
// consumer that restarts from before them, then leaves a hole where the
// lost log's rest was.
func TestWeakLogFileRoundTrip(t *testing.T) {
	pool := network.NewPool[int](8)
	codec := intCodec{pool: pool}
	st := &jobstatus.WeakStats{}
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
	data := logFileOf(t, s, 2, 1)
	logs, err := readLogs(bytes.NewReader(data), func(k int) (dataflow.ChannelCodec, error) {
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
	s2 := newWeakSender(1000, &jobstatus.WeakStats{})
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

// tenRecordLog is the log file of a channel sent records 0..9 in batches
// of 4, none acknowledged, with the pool its batches come from.
func tenRecordLog(t *testing.T) (*network.Pool[int], []byte) {
	t.Helper()
	pool := network.NewPool[int](8)
	s := newWeakSender(1000, &jobstatus.WeakStats{})
	s.setCodec(intCodec{pool: pool})
	g := network.NewGate(1, 64)
	s.connect(g.Channel(0))
	sendRange(t, s, pool, 0, 10, 4)
	return pool, logFileOf(t, s, 0, 0)
}

// TestWeakLogFileCorrupt: a truncated or garbled file is an error naming
// what is wrong, never a silent short log.
func TestWeakLogFileCorrupt(t *testing.T) {
	pool, data := tenRecordLog(t)
	codec := func(int) (dataflow.ChannelCodec, error) { return intCodec{pool: pool}, nil }
	for cut := 1; cut < len(data); cut++ {
		if _, err := readLogs(bytes.NewReader(data[:cut]), codec); err == nil {
			t.Errorf("file cut at %d of %d bytes read without an error", cut, len(data))
		}
	}
	bad := slices.Clone(data)
	bad[len(weakLogHeader)+1+5] = 9 // the first entry's kind, after the header, channel count and channel header
	if _, err := readLogs(bytes.NewReader(bad), codec); err == nil || !strings.Contains(err.Error(), "corrupt output log") {
		t.Errorf("garbled kind: %v, want a corrupt output log error", err)
	}
}

// TestWeakLogFileVersions: a version 1 file (no header, what builds
// before version 2 wrote) reads as the same logs as its version 2 form;
// a version this build does not know, a file cut inside the header, and
// bytes after the announced channels are errors that say so.
func TestWeakLogFileVersions(t *testing.T) {
	pool, v2 := tenRecordLog(t)
	if !bytes.HasPrefix(v2, []byte(weakLogHeader+"\x01")) {
		t.Fatalf("file starts %q, want the version 2 header and one channel", v2[:min(len(v2), 8)])
	}
	v1 := v2[len(weakLogHeader)+1:]
	codec := func(int) (dataflow.ChannelCodec, error) { return intCodec{pool: pool}, nil }
	a, err := readLogs(bytes.NewReader(v1), codec)
	if err != nil {
		t.Fatalf("version 1: %v", err)
	}
	b, err := readLogs(bytes.NewReader(v2), codec)
	if err != nil {
		t.Fatalf("version 2: %v", err)
	}
	la, lb := a[[2]int{0, 0}], b[[2]int{0, 0}]
	if la == nil || lb == nil || la.base != lb.base || !slices.Equal(la.entries, lb.entries) || len(la.payloads) != len(lb.payloads) {
		t.Fatalf("version 1 read %+v, version 2 %+v", la, lb)
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"version 3", append([]byte(weakLogMagicPrefix+"\x03"), v2[len(weakLogHeader):]...), "format version 3"},
		{"cut in the header", v2[:3], "corrupt output log"},
		{"trailing bytes", append(slices.Clone(v2), 0), "after the 1 channels"},
		{"cut after the header", v2[:len(weakLogHeader)+1], "0 of the 1 channels"},
	} {
		if _, err := readLogs(bytes.NewReader(c.file), codec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// BenchmarkWeakSnapshotLogs measures what a producer's snapshot adds in
// WEAKLY_CONSISTENT mode: storing what its output log retains, on the
// task goroutine, per retained record. Between two snapshots new% of the
// log's records are new (sent, the oldest dropped by the bound): 0 % is
// a snapshot of a log that did not change, 100 % one whose whole content
// is new (a log at its bound that turns over within an interval, as in
// bench weak's cost job); when consumers keep up and snapshot about as
// often as the producer, about half of it is new.
//
//	go test ./internal/runtime -run XXX -bench WeakSnapshotLogs -benchmem
func BenchmarkWeakSnapshotLogs(b *testing.B) {
	for _, held := range []int{10_000, 100_000} {
		for _, fresh := range []int{0, 50, 100} {
			b.Run(fmt.Sprintf("records=%d/new=%d%%", held, fresh), func(b *testing.B) {
				pool := network.NewPool[int](1024)
				s := newWeakSender(held, &jobstatus.WeakStats{})
				s.setCodec(intCodec{pool: pool})
				g := network.NewGate(1, 1<<20)
				s.connect(g.Channel(0))
				next := 0
				send := func(n int) {
					for i := 0; i < n; i += 1024 {
						bt := pool.Get()
						for range min(1024, n-i) {
							bt.Records = append(bt.Records, next)
							next++
						}
						if err := s.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: bt}, 1<<20, nil); err != nil {
							b.Fatal(err)
						}
					}
					for {
						_, bt, ok := g.Poll()
						if !ok {
							break
						}
						recycleBuffer(bt)
					}
				}
				send(held)
				w := &weakTask{outs: [][]*weakSender{{s}}}
				if _, err := w.snapshotLogs(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				var n int
				for range b.N {
					b.StopTimer()
					send(held * fresh / 100)
					b.StartTimer()
					data, err := w.snapshotLogs()
					if err != nil {
						b.Fatal(err)
					}
					n = data.size
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(held), "ns/record")
				b.ReportMetric(float64(n)/float64(held), "bytes/record")
			})
		}
	}
}

// TestWeakLogCacheMatchesEncoding: a snapshot that reuses what earlier
// ones encoded (logCache) stores exactly the bytes a snapshot encoding
// every entry anew stores, while the log appends, drops for its bound and
// truncates between snapshots; and what an earlier snapshot took still
// reads the same afterwards (its asynchronous part writes it late).
func TestWeakLogCacheMatchesEncoding(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		pool := network.NewPool[int](8)
		s := newWeakSender(5+rng.IntN(60), &jobstatus.WeakStats{})
		s.setCodec(intCodec{pool: pool})
		g := network.NewGate(1, 1<<16)
		s.connect(g.Channel(0))
		w := &weakTask{outs: [][]*weakSender{{s}}}
		var read []weak.Position // what the consumer polled, in order
		var truncated int
		type taken struct {
			snap *logSnapshot
			data []byte
		}
		var snaps []taken
		next := 0
		for step := range 300 {
			switch op := rng.IntN(10); {
			case op < 5:
				bt := pool.Get()
				for range 1 + rng.IntN(8) {
					bt.Records = append(bt.Records, next*(1+rng.IntN(1000)))
					next++
				}
				if err := s.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: bt}, 1<<16, nil); err != nil {
					t.Fatal(err)
				}
			case op == 5:
				if err := s.Send(context.Background(), network.Buffer{Kind: network.Watermark, Watermark: int64(step)}); err != nil {
					t.Fatal(err)
				}
			case op == 6:
				if err := s.Send(context.Background(), network.Buffer{Kind: network.WatermarkStatus, Idle: rng.IntN(2) == 0}); err != nil {
					t.Fatal(err)
				}
			case op == 7 && len(read) > truncated:
				truncated += rng.IntN(len(read)-truncated) + 1
				if err := s.truncate(read[truncated-1]); err != nil {
					t.Fatal(err)
				}
			default:
				snap, err := w.snapshotLogs()
				if err != nil {
					t.Fatal(err)
				}
				ref := &logSnapshot{}
				s.mu.Lock()
				ref.header(0, 0, s.log.Base(), s.log.BaseRecords(), len(s.payloads))
				err = (&logCache{}).sections(s.payloads, s.codec, ref)
				s.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
				got, want := snap.bytes(), ref.bytes()
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %d step %d: snapshot stores %x, encoding anew %x", seed, step, got, want)
				}
				if _, err := readLogs(bytes.NewReader(got), func(int) (dataflow.ChannelCodec, error) { return intCodec{pool: pool}, nil }); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				snaps = append(snaps, taken{snap, got})
			}
			for {
				_, b, ok := g.Poll()
				if !ok {
					break
				}
				read = append(read, weak.Position{Buffers: b.LogBuffers, Records: b.LogRecords})
				recycleBuffer(b)
			}
		}
		for i, sn := range snaps {
			var buf bytes.Buffer
			if _, err := sn.snap.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), sn.data) {
				t.Fatalf("seed %d: snapshot %d changed after it was taken", seed, i)
			}
		}
	}
}

package weir

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
)

type chanRec struct {
	Key   string
	Value int64
}

func TestChannelCodecRoundTrip(t *testing.T) {
	c, err := newChannelCodec[chanRec](4)
	if err != nil {
		t.Fatal(err)
	}
	src := network.NewPool[chanRec](4).Get()
	src.Records = append(src.Records, chanRec{"a", 1}, chanRec{"", -7}, chanRec{"ccc", 1 << 40})
	var buf []byte
	buf = c.AppendBatch(buf, src)
	buf = c.AppendBatch(buf, src)
	for round := range 2 {
		data, n, err := c.DecodeBatch(buf)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		got := data.(*network.Batch[chanRec]).Records
		if len(got) != 3 || got[0] != src.Records[0] || got[1] != src.Records[1] || got[2] != src.Records[2] {
			t.Fatalf("round %d: decoded %v, want %v", round, got, src.Records)
		}
		if c.Records(data) != 3 {
			t.Fatalf("Records = %d, want 3", c.Records(data))
		}
		data.(*network.Batch[chanRec]).Recycle()
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left after two batches", len(buf))
	}
}

func TestChannelCodecCorrupt(t *testing.T) {
	c, err := newChannelCodec[chanRec](4)
	if err != nil {
		t.Fatal(err)
	}
	src := network.NewPool[chanRec](4).Get()
	src.Records = append(src.Records, chanRec{"key", 42})
	good := c.AppendBatch(nil, src)
	for name, b := range map[string][]byte{
		"empty":      nil,
		"truncated":  good[:len(good)-1],
		"huge count": {0xff, 0xff, 0xff, 0xff, 0x0f, 1},
		"bad varint": {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, _, err := c.DecodeBatch(b); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: err = %v, want codec.ErrCorrupt", name, err)
		}
	}
}

func TestChannelCodecZeroSizeRecords(t *testing.T) {
	c, err := newChannelCodec[struct{}](8)
	if err != nil {
		t.Fatal(err)
	}
	src := network.NewPool[struct{}](8).Get()
	src.Records = append(src.Records, struct{}{}, struct{}{})
	b := c.AppendBatch(nil, src)
	data, _, err := c.DecodeBatch(b)
	if err != nil || c.Records(data) != 2 {
		t.Fatalf("decode: %v, %d records; want 2", err, c.Records(data))
	}
	// A count no batch can have is refused rather than looped over.
	if _, _, err := c.DecodeBatch([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("huge zero-size count: err = %v, want codec.ErrCorrupt", err)
	}
}

func TestChannelCodecUnsupportedType(t *testing.T) {
	if _, err := newChannelCodec[chan int](4); !errors.Is(err, codec.ErrUnsupported) {
		t.Fatalf("err = %v, want codec.ErrUnsupported", err)
	}
}

// shuffleRec is the demo's event, the record keyed-sum shuffles.
type shuffleRec struct {
	I, Account, Amount int64
}

// TestChannelCodecNoPerRecordAllocs: a remote channel encodes every batch
// its producer sends and decodes it at the consumer; neither may allocate
// per record (a struct record used to be copied to the heap each way).
func TestChannelCodecNoPerRecordAllocs(t *testing.T) {
	const n = 1024
	c, err := newChannelCodec[shuffleRec](n)
	if err != nil {
		t.Fatal(err)
	}
	src := network.NewPool[shuffleRec](n).Get()
	for i := range int64(n) {
		src.Records = append(src.Records, shuffleRec{I: i, Account: -i, Amount: i << 40})
	}
	buf := c.AppendBatch(nil, src)
	var decoded []shuffleRec
	allocs := testing.AllocsPerRun(20, func() {
		buf = c.AppendBatch(buf[:0], src)
		data, _, err := c.DecodeBatch(buf)
		if err != nil {
			t.Fatal(err)
		}
		batch := data.(*network.Batch[shuffleRec])
		decoded = append(decoded[:0], batch.Records...)
		batch.Recycle()
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations to encode and decode a %d-record batch; want none per record", allocs, n)
	}
	if !slices.Equal(decoded, src.Records) {
		t.Fatalf("round trip changed the records")
	}
}

// BenchmarkChannelCodecBatch encodes and decodes one 1024-record batch of
// the demo's events per op, as a remote channel's producer and consumer
// do; allocs/op must not grow with the batch.
//
//	go test -run XXX -bench ChannelCodecBatch -benchmem .
func BenchmarkChannelCodecBatch(b *testing.B) {
	const n = 1024
	c, err := newChannelCodec[shuffleRec](n)
	if err != nil {
		b.Fatal(err)
	}
	src := network.NewPool[shuffleRec](n).Get()
	for i := range int64(n) {
		src.Records = append(src.Records, shuffleRec{I: i * 7, Account: i % 1000, Amount: i%1000 + 1})
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = c.AppendBatch(buf[:0], src)
		data, _, err := c.DecodeBatch(buf)
		if err != nil {
			b.Fatal(err)
		}
		data.(*network.Batch[shuffleRec]).Recycle()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// A timed batch round trips its Times, whatever the values (NoTimestamp and
// the extremes, whose deltas wrap); an untimed one decodes with nil Times,
// also from a pooled batch that carried times before; a timed empty batch
// keeps non-nil Times.
func TestChannelCodecTimes(t *testing.T) {
	c, err := newChannelCodec[chanRec](4)
	if err != nil {
		t.Fatal(err)
	}
	pool := network.NewPool[chanRec](4)
	const nt = network.NoTimestamp
	cases := []struct {
		recs  []chanRec
		times []int64
	}{
		{[]chanRec{{"a", 1}, {"b", 2}, {"c", 3}}, []int64{1_700_000_000_000, nt, 1_700_000_000_005}},
		{[]chanRec{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}}, []int64{math.MaxInt64, math.MinInt64, -1, math.MaxInt64}},
		{[]chanRec{{"x", 9}}, nil},
		{nil, []int64{}},
		{nil, nil},
	}
	for i, tc := range cases {
		src := pool.Get()
		src.Records = append(src.Records, tc.recs...)
		switch {
		case tc.times != nil:
			src.Times = append(src.Times[:0], tc.times...)
		case len(tc.recs) == 0:
			src.Times = nil // else the empty Times Recycle left say "timed"
		}
		// Otherwise src keeps the empty Times Recycle left (case 2): with
		// records that is untimed.
		buf := c.AppendBatch(nil, src)
		data, n, err := c.DecodeBatch(buf)
		if err != nil || n != len(buf) {
			t.Fatalf("case %d: decode %d of %d bytes: %v", i, n, len(buf), err)
		}
		got := data.(*network.Batch[chanRec])
		if !slices.Equal(got.Records, tc.recs) || !slices.Equal(got.Times, tc.times) || (got.Times == nil) != (tc.times == nil) {
			t.Fatalf("case %d: decoded %v times %#v, want %v times %#v", i, got.Records, got.Times, tc.recs, tc.times)
		}
		if tc.times != nil {
			// Truncating anywhere in the timestamps is corrupt.
			for cut := len(buf) - 1; cut >= 0 && cut >= len(buf)-len(tc.times); cut-- {
				if _, _, err := c.DecodeBatch(buf[:cut]); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("case %d cut at %d: err = %v, want codec.ErrCorrupt", i, cut, err)
				}
			}
		}
		got.Recycle() // back to c's pool with Times capacity: the next untimed case must get nil
		src.Recycle()
	}
	// A batch with some but not all timestamps is a bug, not silently cut.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("AppendBatch of 2 records with 1 timestamp did not panic")
			}
		}()
		c.AppendBatch(nil, &network.Batch[chanRec]{Records: make([]chanRec, 2), Times: []int64{1}})
	}()
	// A timed count the bytes cannot hold a timestamp for each: corrupt.
	if _, _, err := c.DecodeBatch([]byte{0x07, 0, 0, 0}); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("3 timed records in 3 bytes: err = %v, want codec.ErrCorrupt", err)
	}
}

// The header is count<<1 | timed: pinned, since channel state and the
// remote data plane both store it.
func TestChannelCodecTimedLayout(t *testing.T) {
	c, err := newChannelCodec[int64](4)
	if err != nil {
		t.Fatal(err)
	}
	src := network.NewPool[int64](4).Get()
	src.Records = append(src.Records, 5, 6)
	src.Times = append(src.Times, 10, 7)
	got := c.AppendBatch(nil, src)
	want := append([]byte{2<<1 | 1}, c.(*batchCodec[int64]).c.Append(nil, 5)...)
	want = append(want, c.(*batchCodec[int64]).c.Append(nil, 6)...)
	want = append(want, 20, 5) // zigzag(10), zigzag(-3)
	if !slices.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	src.Times = nil
	if got := c.AppendBatch(nil, src); got[0] != 2<<1 {
		t.Fatalf("untimed header %x, want %x", got[0], 2<<1)
	}
}

// TestChannelCodecTimesRandom round trips seeded random batches, timed or
// not, several per buffer.
func TestChannelCodecTimesRandom(t *testing.T) {
	c, err := newChannelCodec[chanRec](8)
	if err != nil {
		t.Fatal(err)
	}
	pool := network.NewPool[chanRec](8)
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var buf []byte
		var want []*network.Batch[chanRec]
		for range 1 + rng.IntN(4) {
			b := pool.Get()
			timed := rng.IntN(2) == 0
			if timed {
				b.Times = make([]int64, 0, 8) // non-nil even with no records
			}
			for range rng.IntN(9) {
				b.Records = append(b.Records, chanRec{strings.Repeat("k", rng.IntN(3)), rng.Int64()})
				if timed {
					ts := []int64{network.NoTimestamp, rng.Int64(), -rng.Int64(), rng.Int64N(2000) + 1_700_000_000_000}[rng.IntN(4)]
					b.Times = append(b.Times, ts)
				}
			}
			buf = c.AppendBatch(buf, b)
			want = append(want, b)
		}
		for i, w := range want {
			data, n, err := c.DecodeBatch(buf)
			if err != nil {
				t.Fatalf("seed %d batch %d: %v", seed, i, err)
			}
			got := data.(*network.Batch[chanRec])
			if !slices.Equal(got.Records, w.Records) || !slices.Equal(got.Times, w.Times) || (got.Times == nil) != (w.Times == nil) {
				t.Fatalf("seed %d batch %d: got %v %v, want %v %v", seed, i, got.Records, got.Times, w.Records, w.Times)
			}
			buf = buf[n:]
			got.Recycle()
			w.Times = nil
			w.Recycle()
		}
	}
}

// FuzzChannelCodec decodes arbitrary bytes: nothing panics, every error is
// codec.ErrCorrupt, and an accepted batch re-encodes and decodes to the same
// records and times.
func FuzzChannelCodec(f *testing.F) {
	c, err := newChannelCodec[chanRec](4)
	if err != nil {
		f.Fatal(err)
	}
	src := network.NewPool[chanRec](4).Get()
	src.Records = append(src.Records, chanRec{"a", 1}, chanRec{"b", -2})
	f.Add(c.AppendBatch(nil, src))
	src.Times = []int64{network.NoTimestamp, 5}
	f.Add(c.AppendBatch(nil, src))
	f.Add([]byte{0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		data, n, err := c.DecodeBatch(b)
		if err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("error %v is not codec.ErrCorrupt", err)
			}
			return
		}
		got := data.(*network.Batch[chanRec])
		if n > len(b) || len(got.Times) != 0 && len(got.Times) != len(got.Records) {
			t.Fatalf("decoded %d of %d bytes, %d records, %d times", n, len(b), len(got.Records), len(got.Times))
		}
		re := c.AppendBatch(nil, got)
		again, _, err := c.DecodeBatch(re)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		a := again.(*network.Batch[chanRec])
		if !slices.Equal(a.Records, got.Records) || !slices.Equal(a.Times, got.Times) || (a.Times == nil) != (got.Times == nil) {
			t.Fatalf("re-encoded batch changed: %v %v, was %v %v", a.Records, a.Times, got.Records, got.Times)
		}
	})
}

// TestChannelCodecKeepKeyGroups: a decoded batch keeps exactly the records
// (and their timestamps) whose key group, as the hash partitioner computes
// it, the filter accepts, in order; a key function of another record type
// is an error, not a panic.
func TestChannelCodecKeepKeyGroups(t *testing.T) {
	c, err := newChannelCodec[chanRec](8)
	if err != nil {
		t.Fatal(err)
	}
	hash := func(r chanRec) uint32 { return keygroup.String(r.Key) }
	const maxP = 16
	own := keygroup.RangeFor(maxP, 3, 1)
	for _, timed := range []bool{false, true} {
		src := network.NewPool[chanRec](8).Get()
		var wantRecs []chanRec
		var wantTimes []int64
		for i := range 40 {
			r := chanRec{Key: fmt.Sprint("k", i), Value: int64(i)}
			src.Records = append(src.Records, r)
			if timed {
				src.Times = append(src.Times, int64(1000+i))
			}
			if own.Contains(keygroup.Of(hash(r), maxP)) {
				wantRecs = append(wantRecs, r)
				if timed {
					wantTimes = append(wantTimes, int64(1000+i))
				}
			}
		}
		if !timed {
			src.Times = nil
		}
		if len(wantRecs) == 0 || len(wantRecs) == 40 {
			t.Fatalf("the keys should spread over the subtasks: %d of 40 in %v", len(wantRecs), own)
		}
		data, _, err := c.DecodeBatch(c.AppendBatch(nil, src))
		if err != nil {
			t.Fatal(err)
		}
		data, n, err := c.KeepKeyGroups(data, hash, maxP, own.Contains)
		if err != nil {
			t.Fatal(err)
		}
		got := data.(*network.Batch[chanRec])
		if n != len(wantRecs) || !slices.Equal(got.Records, wantRecs) || !slices.Equal(got.Times, wantTimes) {
			t.Errorf("timed %v: kept %d: %v %v, want %v %v", timed, n, got.Records, got.Times, wantRecs, wantTimes)
		}
		// The hash partitioner routes the kept records to subtask 1 of 3.
		for _, r := range got.Records {
			if sub := keygroup.OperatorIndex(keygroup.Of(hash(r), maxP), maxP, 3); sub != 1 {
				t.Errorf("kept %v, which the partitioner routes to subtask %d", r, sub)
			}
		}
	}
	if _, _, err := c.KeepKeyGroups(network.NewPool[chanRec](1).Get(), func(int) uint32 { return 0 }, maxP, own.Contains); err == nil || !strings.Contains(err.Error(), "does not take") {
		t.Errorf("key function of another type: %v", err)
	}
}

package weir

import (
	"errors"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/codec"
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

package runtime

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/codec"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/keygroup"
)

// memWriter is a StateWriter keeping files in memory.
type memWriter struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (m *memWriter) WriteFile(_ context.Context, name string, write func(io.Writer) error) (checkpoint.StateFile, error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return checkpoint.StateFile{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = b.Bytes()
	return checkpoint.StateFile{Path: name, Size: int64(b.Len())}, nil
}

// bytesCodec treats a batch as a []byte of one-byte records.
type bytesCodec struct{}

func (bytesCodec) AppendBatch(dst []byte, data any) []byte { return append(dst, data.([]byte)...) }
func (bytesCodec) DecodeBatch(src []byte) (any, int, error) {
	return append([]byte(nil), src...), len(src), nil
}
func (bytesCodec) Records(data any) int { return len(data.([]byte)) }

// KeepKeyGroups takes keyHash as a func(byte) uint32.
func (bytesCodec) KeepKeyGroups(data any, keyHash any, maxParallelism int, keep func(int) bool) (any, int, error) {
	h := keyHash.(func(byte) uint32)
	var out []byte
	for _, b := range data.([]byte) {
		if keep(keygroup.Of(h(b), maxParallelism)) {
			out = append(out, b)
		}
	}
	return out, len(out), nil
}
func (bytesCodec) Schema() []byte { return testSchema[[]byte]() }

// TestRecorderWaitsForInFlightData: a channel whose priority barrier
// overtook data still on its way keeps recording until the data up to the
// barrier's Seq arrived, and the channel state is complete only then.
func TestRecorderWaitsForInFlightData(t *testing.T) {
	chans := []channelInfo{
		{input: 0, producerUID: "src", producerParallelism: 2, producer: 0, codec: bytesCodec{}},
		{input: 0, producerUID: "src", producerParallelism: 2, producer: 1, codec: bytesCodec{}},
	}
	mw := &memWriter{files: map[string][]byte{}}
	var wg sync.WaitGroup
	ctx := context.Background()
	r := newChannelRecorder(ctx, 4, chans, 1<<20, faults.New(faults.Plan{}), mw, "agg-0.channel", &wg)
	// Channel 0: overtaken data recorded at the barrier, then two more
	// buffers (Seq 5 and 6) still arriving up to the barrier's Seq 6.
	for _, b := range []string{"ab", "c"} {
		if err := r.record(ctx, 0, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	r.awaitUntil(0, 4, 6) // Seq 3 and 4 were the overtaken ones recorded above
	if !r.waiting() || !r.on[0] {
		t.Fatalf("channel 0 must keep recording until Seq 6")
	}
	if err := r.record(ctx, 0, []byte("d")); err != nil {
		t.Fatal(err)
	}
	if r.arrived(0, 5) {
		t.Fatalf("Seq 5 of 6 ended the wait")
	}
	if err := r.record(ctx, 0, []byte("ef")); err != nil {
		t.Fatal(err)
	}
	if !r.arrived(0, 6) || r.waiting() || r.on[0] {
		t.Fatalf("Seq 6 must end the wait and the recording of channel 0")
	}
	if err := r.finish(ctx); err != nil {
		t.Fatal(err)
	}
	h, n, err := r.result(ctx)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Channels) != 1 || h.Channels[0].Records != 6 || h.Channels[0].Producer != 0 || n != h.File.Size-int64(storage.ChannelStateHeaderLen) {
		t.Fatalf("handle %+v, %d bytes recorded", h, n)
	}
	// The file reads back as the frames recorded, in order.
	fr := storage.NewChannelFrameReader(bytes.NewReader(mw.files["agg-0.channel"]), h)
	var got []byte
	for {
		f, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Payload...)
	}
	if string(got) != "abcdef" {
		t.Fatalf("recorded %q, want %q", got, "abcdef")
	}
}

// TestRecorderAbortEndsWriter: an aborted recorder gives no handle and its
// writer goroutine ends.
func TestRecorderAbortEndsWriter(t *testing.T) {
	mw := &memWriter{files: map[string][]byte{}}
	var wg sync.WaitGroup
	ctx := context.Background()
	r := newChannelRecorder(ctx, 2, []channelInfo{{codec: bytesCodec{}, producerUID: "src", producerParallelism: 1}}, 1<<20, faults.New(faults.Plan{}), mw, "x.channel", &wg)
	if err := r.record(ctx, 0, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	r.abort()
	wg.Wait()
	if _, _, err := r.result(ctx); err != errRecorderAborted {
		t.Fatalf("result after abort: %v, want errRecorderAborted", err)
	}
}

// TestRecorderBound: channel state beyond its bound is refused with
// errChannelStateTooLarge, and nothing more is recorded after stopAll.
func TestRecorderBound(t *testing.T) {
	mw := &memWriter{files: map[string][]byte{}}
	var wg sync.WaitGroup
	ctx := context.Background()
	r := newChannelRecorder(ctx, 2, []channelInfo{{codec: bytesCodec{}, producerUID: "src", producerParallelism: 1}}, 10, faults.New(faults.Plan{}), mw, "x.channel", &wg)
	if err := r.record(ctx, 0, []byte("0123456789")); err == nil {
		t.Fatalf("12 bytes of channel state under a bound of 10 accepted")
	}
	r.stopAll()
	if err := r.record(ctx, 0, []byte("more")); err != nil || r.records[0] != 10 {
		t.Fatalf("record after stopAll: %v, %d records", err, r.records[0])
	}
	r.abort()
	wg.Wait()
}

// testSchema is the encoded schema of T, for the tests' channel codecs.
func testSchema[T any]() []byte {
	s, err := codec.SchemaFor[T]()
	if err != nil {
		panic(err)
	}
	return codec.AppendSchema(nil, s)
}

package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/security"
)

// int64Codec encodes *network.Batch[int64] as the runtime's codecs do: a
// uvarint count, then the records (zigzag varints).
type int64Codec struct{}

func (int64Codec) AppendBatch(dst []byte, data any) []byte {
	b := data.(*network.Batch[int64])
	dst = binary.AppendUvarint(dst, uint64(len(b.Records)))
	for _, r := range b.Records {
		dst = binary.AppendVarint(dst, r)
	}
	return dst
}

func (int64Codec) Records(data any) int { return len(data.(*network.Batch[int64]).Records) }

// decodeInt64s appends the records of an encoded batch to dst.
func decodeInt64s(dst []int64, src []byte) ([]int64, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return dst, errors.New("bad count")
	}
	src = src[k:]
	for range n {
		v, k := binary.Varint(src)
		if k <= 0 {
			return dst, errors.New("bad record")
		}
		dst = append(dst, v)
		src = src[k:]
	}
	if len(src) != 0 {
		return dst, errors.New("trailing bytes")
	}
	return dst, nil
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tm is one test "TaskManager": a ConnManager on a loopback listener.
type tm struct {
	id  string
	mgr *ConnManager
	log *syncBuf
}

func newTM(t testing.TB, id string) *tm { return newTLSTM(t, id, nil) }

// newTLSTM is newTM with the data plane's TLS (nil: plain TCP).
func newTLSTM(t testing.TB, id string, tlsCfg *security.Internal) *tm {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	m, err := NewConnManager(Config{
		ResourceID:     id,
		BuildID:        "test-build",
		ConnectTimeout: 5 * time.Second,
		TLS:            tlsCfg,
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
	}, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &tm{id: id, mgr: m, log: logs}
}

func (x *tm) addr() string { return x.mgr.Addr().String() }

// connect returns both ends of the connection between a and b.
func connect(t testing.TB, a, b *tm) (*Conn, *Conn) {
	t.Helper()
	ctx := context.Background()
	var cb *Conn
	var errB error
	done := make(chan struct{})
	go func() {
		defer close(done)
		cb, errB = b.mgr.Conn(ctx, a.id, a.addr())
	}()
	ca, err := a.mgr.Conn(ctx, b.id, b.addr())
	<-done
	if err != nil || errB != nil {
		t.Fatalf("connect: %v, %v", err, errB)
	}
	return ca, cb
}

func key(producer, consumer int) PartitionKey {
	return PartitionKey{Job: "job", Producer: checkpoint.TaskID{Vertex: 0, Subtask: producer}, Edge: 0, Consumer: consumer}
}

// outChannel registers a producer's channel to consumer on x.
func outChannel(t testing.TB, x *tm, producer, consumer, credits int) *OutChannel {
	t.Helper()
	o, err := NewOutChannel(OutChannelConfig{Key: key(producer, consumer), Codec: int64Codec{}, Credits: credits})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.mgr.Registry().Register(o); err != nil {
		t.Fatal(err)
	}
	return o
}

// failures collects OnFailure calls.
type failures struct {
	mu   sync.Mutex
	errs []error
	ch   chan struct{}
}

func newFailures() *failures { return &failures{ch: make(chan struct{}, 64)} }

func (f *failures) record(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
	f.ch <- struct{}{}
}

func (f *failures) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-f.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no channel failure reported")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[len(f.errs)-1]
}

func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errs)
}

// eventually polls cond until it holds or fails the test after 10s. It is
// for states another goroutine reaches without a signal to wait on (a
// producer blocked in Send).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func describeBuf(ch int, b network.Buffer) string {
	switch b.Kind {
	case network.Barrier:
		return fmt.Sprintf("%d:barrier%d", ch, b.Barrier.ID)
	case network.CancelBarrier:
		return fmt.Sprintf("%d:cancel%d", ch, b.Cancel)
	case network.Watermark:
		return fmt.Sprintf("%d:wm%d", ch, b.Watermark)
	case network.WatermarkStatus:
		if b.Idle {
			return fmt.Sprintf("%d:idle", ch)
		}
		return fmt.Sprintf("%d:active", ch)
	}
	return fmt.Sprintf("%d:%s", ch, b.Kind)
}

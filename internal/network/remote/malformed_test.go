package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
)

// rawDial opens a TCP connection to x, as a misbehaving peer would.
func rawDial(t *testing.T, x *tm) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", x.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

// readError reads frames until an Error on channel 0 and returns its
// message; it fails if the connection closes first.
func readError(t *testing.T, nc net.Conn) string {
	t.Helper()
	rd := wire.NewReader(nc, 0)
	for {
		f, err := rd.Next()
		if err != nil {
			t.Fatalf("connection ended without an Error frame: %v", err)
		}
		if f.Kind == wire.Error && f.Channel == 0 {
			msg := wire.DecodeError(f.Payload)
			if _, err := rd.Next(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("connection still open after the Error frame: %v", err)
			}
			return msg
		}
	}
}

// healthy checks that b still carries data from a over their own
// connection: one bad peer breaks nothing else.
func healthy(t *testing.T, a, b *tm, producer int) {
	t.Helper()
	_, cb := connect(t, a, b)
	g := network.NewGate(1, 2)
	if _, err := cb.OpenInput(InputConfig{Key: key(producer, 0), Gate: g, Channel: 0}); err != nil {
		t.Fatal(err)
	}
	o := outChannel(t, a, producer, 0, 2)
	w := network.NewWriter([]*OutChannel{o}, network.Forward[int64](), network.NewPool[int64](4), 0)
	go func() { _ = produce(context.Background(), w, 100) }()
	if l := consume(context.Background(), g); l.err != nil || len(l.values[0]) != 100 {
		t.Fatalf("healthy channel: %d records, %v", len(l.values[0]), l.err)
	}
}

func TestMalformedFramesCloseOnlyTheirConnection(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, _ = connect(t, a, b)

	t.Run("garbage", func(t *testing.T) {
		nc := rawDial(t, b)
		_, _ = nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if msg := readError(t, nc); !strings.Contains(msg, "length") {
			t.Fatalf("error frame %q does not name the defect", msg)
		}
		eventually(t, "the refusal to be logged", func() bool { return strings.Contains(b.log.String(), "refused a connection") })
	})

	t.Run("wrong version", func(t *testing.T) {
		nc := rawDial(t, b)
		hello := wire.HelloMsg{Version: wire.Version + 1, From: "tm-0", To: "tm-b", BuildID: "test-build"}.Append(nil)
		_, _ = nc.Write(wire.AppendFrame(nil, wire.Header{Kind: wire.Hello}, hello))
		if msg := readError(t, nc); !strings.Contains(msg, "protocol 2, this process 1") {
			t.Fatalf("error frame %q does not name both versions", msg)
		}
	})

	t.Run("uncredited data", func(t *testing.T) {
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
		g := network.NewGate(1, 2)
		fails := newFailures()
		if _, err := cb.OpenInput(InputConfig{Key: key(9, 0), Gate: g, Channel: 0, OnFailure: fails.record}); err != nil {
			t.Fatal(err)
		}
		f, err := rd.Next()
		if err != nil || f.Kind != wire.PartitionRequest {
			t.Fatalf("want a partition request, got %v %v", f.Kind, err)
		}
		var out []byte
		for seq := range uint64(3) { // 2 credits granted
			out = wire.AppendData(out, f.Channel, seq, wire.DataMsg{Records: 1, Bytes: []byte{1, 2}})
		}
		_, _ = nc.Write(out)
		if msg := readError(t, nc); !strings.Contains(msg, "data without credit") {
			t.Fatalf("error frame %q does not name the violation", msg)
		}
		if err := fails.wait(t); !errors.Is(err, ErrConnClosed) {
			t.Fatalf("input channel failed with %v", err)
		}
		eventually(t, "the malformed frame to be logged", func() bool {
			l := b.log.String()
			return strings.Contains(l, "malformed frame") && strings.Contains(l, "peer=tm-0")
		})
		for _, buf, ok := g.Poll(); ok; _, buf, ok = g.Poll() {
			if s, isData := buf.Data.(*network.Serialized); isData {
				s.Release()
			}
		}
	})

	healthy(t, a, b, 1)
}

// A request for a partition that is never deployed is refused after the
// connect timeout; one for a superseded attempt at once.
func TestPartitionRequestRefused(t *testing.T) {
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	a.mgr.reg.timeout = 50 * time.Millisecond
	_, cb := connect(t, a, b)
	g := network.NewGate(2, 2)
	fails := newFailures()
	if _, err := cb.OpenInput(InputConfig{Key: key(5, 0), Gate: g, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	if err := fails.wait(t); !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "connect-timeout") {
		t.Fatalf("got %v, want a refusal naming the connect timeout", err)
	}
	o, _ := NewOutChannel(OutChannelConfig{Key: key(6, 0), Attempt: 2, Codec: int64Codec{}, Credits: 2})
	if err := a.mgr.Registry().Register(o); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.OpenInput(InputConfig{Key: key(6, 0), Attempt: 1, Gate: g, Channel: 1, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	if err := fails.wait(t); !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("got %v, want a superseded refusal", err)
	}
	o.Close()
}

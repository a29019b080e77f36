package remote

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
)

// FuzzConnReader feeds arbitrary bytes to a real connection reader over
// net.Pipe, with an input channel open (id 1) and a registry to answer
// requests: it must never panic, and must close with an error and end its
// goroutines (goleak in TestMain) however the bytes end.
func FuzzConnReader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("garbage that is not a frame"))
	f.Add(wire.AppendData(nil, 1, 0, wire.DataMsg{Records: 1, Bytes: []byte{1, 2}}))
	var seq []byte
	for s := range uint64(3) {
		seq = wire.AppendData(seq, 1, s, wire.DataMsg{Records: 1, Bytes: []byte{1, 0}})
	}
	f.Add(seq)
	f.Add(wire.AppendEvent(wire.AppendAddCredit(nil, 4, 1), 1, 0, wire.EventMsg{Kind: network.Barrier, Priority: true, Seq: 9}))
	f.Add(wire.AppendEvent(nil, 1, 0, wire.EventMsg{Kind: network.EndOfPartition}))
	f.Add(wire.AppendPartitionRequest(nil, 3, wire.PartitionRequestMsg{Job: "job", Credit: 2, BufferSize: 10}))
	f.Add(wire.AppendError(nil, 1, "nope"))
	f.Add(wire.AppendEvent(nil, 1, 0, wire.EventMsg{Kind: network.Announcement, Priority: true, Seq: 2}))
	f.Add(wire.AppendPrioritize(wire.AppendPrioritize(nil, 3, 5), 1, 5))
	f.Add(wire.AppendHello(nil, wire.Hello, wire.HelloMsg{From: "a", To: "b"}))
	// Weak mode: positioned data and events, a weak request (no handler
	// here: refused), Releases for a known and an unknown channel.
	f.Add(wire.AppendEvent(wire.AppendData(nil, 1, 0, wire.DataMsg{Pos: wire.LogPos{Buffers: 1, Records: 1}, Records: 1, Bytes: []byte{1, 2}}),
		1, 1, wire.EventMsg{Kind: network.Watermark, Watermark: 5, Pos: wire.LogPos{Buffers: 2, Records: 1}}))
	f.Add(wire.AppendRelease(wire.AppendPartitionRequest(nil, 3, wire.PartitionRequestMsg{Job: "job", Credit: 2, BufferSize: 10, Weak: true, From: wire.LogPos{Buffers: 4, Records: 9}}),
		3, wire.LogPos{Buffers: 4, Records: 9}))
	f.Add(wire.AppendRelease(nil, 1, wire.LogPos{Buffers: 1, Records: 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		server, client := net.Pipe()
		cfg := Config{ResourceID: "tm-b", ConnectTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		reg := NewPartitionRegistry(10 * time.Millisecond)
		defer reg.Close()
		c := newConn(server, wire.NewReader(server, 0), "tm-b", "tm-a", reg, &cfg, new(Traffic), nil)
		g := network.NewGate(1, 2)
		ic, err := c.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0})
		if err != nil {
			t.Fatal(err)
		}
		drained := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, client); close(drained) }()
		_, _ = client.Write(data)
		// Poll like a task, returning credits, before the peer goes away.
		for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
			if s, isData := b.Data.(*network.Serialized); isData {
				s.Release()
			}
		}
		_ = client.Close()
		<-c.Done()
		<-drained
		if c.Err() == nil {
			t.Fatal("connection done without an error")
		}
		ic.Close()
	})
}

package network

import (
	"context"
	"errors"
	"testing"
)

// A remote reader delivers against credits and must never wait: Deliver
// refuses data beyond them with ErrNoCredit and leaves the buffer to the
// caller, while events still go in, in order.
func TestDeliverRefusesDataWithoutCredit(t *testing.T) {
	g := NewGate(1, 2)
	c := g.Channel(0)
	p := NewPool[int](4)
	for i := range 2 {
		if err := c.Deliver(dataBuf(p, i)); err != nil {
			t.Fatal(err)
		}
	}
	extra := dataBuf(p, 9)
	if err := c.Deliver(extra); !errors.Is(err, ErrNoCredit) {
		t.Fatalf("third delivery: got %v, want ErrNoCredit", err)
	}
	extra.Data.(*Batch[int]).Recycle() // still ours
	if err := c.Deliver(barrier(1)); err != nil {
		t.Fatal(err)
	}
	if got, want := drain(g), "0:data[0] 0:data[1] 0:barrier1"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if err := c.Deliver(Buffer{Kind: EndOfPartition}); err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(barrier(2)); err == nil {
		t.Fatal("delivery after end of partition succeeded")
	}
}

// A priority event from a remote producer keeps the producer's Seq, which
// may be ahead of the data delivered so far; data arriving later still get
// Seqs counting on from what was delivered.
func TestDeliverPriorityKeepsTheProducersSeq(t *testing.T) {
	g := NewGate(1, 4)
	c := g.Channel(0)
	p := NewPool[int](4)
	if err := c.Deliver(dataBuf(p, 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeliverPriority(Buffer{Kind: Barrier, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeliverPriority(Buffer{Kind: Barrier, Seq: 0}); err == nil {
		t.Fatal("priority delivery behind delivered data succeeded")
	}
	if err := c.DeliverPriority(Buffer{Kind: EndOfData, Seq: 5}); err == nil {
		t.Fatal("priority delivery of end of data succeeded")
	}
	for _, v := range []int{2, 3, 4} {
		if err := c.Deliver(dataBuf(p, v)); err != nil && !errors.Is(err, ErrNoCredit) {
			t.Fatal(err)
		}
	}
	var seqs []uint64
	var prio []bool
	for _, b, ok := g.Poll(); ok; _, b, ok = g.Poll() {
		seqs = append(seqs, b.Seq)
		prio = append(prio, b.Priority)
		if b.Kind == Data {
			b.Data.(*Batch[int]).Recycle()
		}
	}
	if want := []uint64{3, 1, 2, 3, 4}; !equal(seqs, want) || !prio[0] || prio[1] {
		t.Fatalf("seqs %v priority %v, want %v with only the first priority", seqs, prio, want)
	}
}

func equal[E comparable](a, b []E) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The credit listener hears one credit per polled Data buffer, after the
// lock is released (it may call Stats), and nothing for events or while the
// channel is blocked.
func TestCreditListener(t *testing.T) {
	g := NewGate(2, 4)
	var heard []int
	g.SetCreditListener(1, func(n int) {
		_ = g.Stats() // would deadlock under the gate's lock
		heard = append(heard, n)
	})
	p := NewPool[int](4)
	mustSend(t, g.Channel(1), dataBuf(p, 1))
	mustSend(t, g.Channel(1), barrier(1))
	mustSend(t, g.Channel(0), dataBuf(p, 2))
	g.Block(1)
	drain(g)
	if len(heard) != 0 {
		t.Fatalf("blocked channel returned credits: %v", heard)
	}
	g.Unblock(1)
	drain(g)
	if !equal(heard, []int{1}) {
		t.Fatalf("heard %v, want [1]", heard)
	}
}

// A Writer runs over any Sender: a fake that counts calls sees one call per
// batch and the overdraft limit the writer was made with.
func TestWriterOverSenders(t *testing.T) {
	g := NewGate(1, 4)
	f := &countingSender{Channel: g.Channel(0)}
	d := NewDebt()
	w := NewWriter([]Sender{f}, Forward[int](), NewPool[int](2), 0, WithOverdraft(2, d))
	for i := range 4 {
		if err := w.Emit(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.BroadcastPriority(barrier(1)); err != nil {
		t.Fatal(err)
	}
	if f.data != 2 || f.prio != 1 || f.limit != 2 {
		t.Fatalf("data %d prio %d limit %d, want 2 1 2", f.data, f.prio, f.limit)
	}
	if got, want := drain(g), "0:barrier1 0:data[0 1] 0:data[2 3]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

type countingSender struct {
	*Channel
	data, prio, limit int
}

func (s *countingSender) SendOverdraft(ctx context.Context, b Buffer, max int, d *Debt) error {
	s.data++
	s.limit = max
	return s.Channel.SendOverdraft(ctx, b, max, d)
}

func (s *countingSender) SendPriority(b Buffer) error {
	s.prio++
	return s.Channel.SendPriority(b)
}

func TestSerializedPool(t *testing.T) {
	p := NewSerializedPool(16)
	a := p.Get(8)
	if cap(a.Bytes) < 16 || len(a.Bytes) != 0 {
		t.Fatalf("cap %d len %d", cap(a.Bytes), len(a.Bytes))
	}
	a.Bytes = append(a.Bytes, 1, 2, 3)
	a.Records = 1
	a.Release()
	b := p.Get(4)
	if b != a || len(b.Bytes) != 0 || b.Records != 0 || p.Allocated() != 1 {
		t.Fatalf("not reused and reset: %p %p %d", a, b, p.Allocated())
	}
	big := p.Get(1000)
	if cap(big.Bytes) < 1000 || p.Allocated() != 2 {
		t.Fatal("big request")
	}
	big.Release() // dropped: beyond 4 × size
	if p.Allocated() != 1 {
		t.Fatalf("allocated %d after dropping the big one", p.Allocated())
	}
	b.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("double release did not panic")
		}
	}()
	b.Release()
}

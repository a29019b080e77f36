package network

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/weirstream/weir/internal/checkpoint"
)

func TestChannelIsFIFOForDataAndEvents(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(1, 8)
	c := g.Channel(0)
	mustSend(t, c, dataBuf(p, 1, 2))
	mustSend(t, c, barrier(7))
	mustSend(t, c, dataBuf(p, 3))
	mustSend(t, c, Buffer{Kind: CancelBarrier, Cancel: 7})
	mustSend(t, c, dataBuf(p, 4))
	mustSend(t, c, Buffer{Kind: EndOfPartition})
	want := "0:data[1 2] 0:barrier7 0:data[3] 0:cancel7 0:data[4] 0:eop"
	if got := drain(g); got != want {
		t.Fatalf("poll order\n got %s\nwant %s", got, want)
	}
	if err := c.Send(context.Background(), barrier(8)); err == nil {
		t.Fatal("send after end of partition succeeded")
	}
}

func TestEventsTakeNoCredit(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(1, 1)
	c := g.Channel(0)
	mustSend(t, c, dataBuf(p, 1))
	// The only credit is taken; events still go through without waiting,
	// even with a cancelled context.
	for id := 1; id <= 3; id++ {
		if err := c.Send(cancelled(), barrier(checkpoint.ID(id))); err != nil {
			t.Fatalf("barrier %d: %v", id, err)
		}
	}
	if err := c.Send(cancelled(), dataBuf(p, 2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("data without credit: got %v, want context.Canceled", err)
	}
	s := g.Stats().Channels[0]
	if s.QueuedData != 1 || s.QueuedEvents != 3 || s.Credits != 0 || s.BackpressureWaits != 1 {
		t.Fatalf("stats %+v", s)
	}
	if got, want := drain(g), "0:data[1] 0:barrier1 0:barrier2 0:barrier3"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// A producer with no consumer blocks after exactly creditsPerChannel data
// buffers, and each poll lets exactly one more through.
func TestCreditsBoundTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const credits = 3
		p := NewPool[int](1)
		g := NewGate(1, credits)
		var sent atomic.Int64
		done := make(chan error)
		go func() {
			for i := range credits + 2 {
				if err := g.Channel(0).Send(context.Background(), dataBuf(p, i)); err != nil {
					done <- err
					return
				}
				sent.Add(1)
			}
			done <- nil
		}()
		synctest.Wait()
		if got := sent.Load(); got != credits {
			t.Fatalf("producer sent %d buffers before blocking, want %d", got, credits)
		}
		s := g.Stats().Channels[0]
		if s.Credits != 0 || s.QueuedData != credits || s.Waiting != 1 || !s.Backpressured() {
			t.Fatalf("stats while blocked: %+v", s)
		}
		for want := int64(credits + 1); want <= credits+2; want++ {
			if _, b, ok := g.Poll(); !ok {
				t.Fatal("nothing to poll")
			} else {
				b.Data.(*Batch[int]).Recycle()
			}
			synctest.Wait()
			if got := sent.Load(); got != want {
				t.Fatalf("after a poll the producer sent %d, want %d", got, want)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got, want := drain(g), "0:data[2] 0:data[3] 0:data[4]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if s := g.Stats().Channels[0]; s.Credits != credits || s.BackpressureWaits != 2 {
			t.Fatalf("final stats %+v", s)
		}
	})
}

func TestCancelUnblocksBlockedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool[int](1)
		g := NewGate(1, 1)
		mustSend(t, g.Channel(0), dataBuf(p, 1))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- g.Channel(0).Send(ctx, dataBuf(p, 2)) }()
		synctest.Wait()
		if w := g.Stats().Channels[0].Waiting; w != 1 {
			t.Fatalf("waiting senders %d, want 1", w)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		s := g.Stats().Channels[0]
		if s.Waiting != 0 || s.QueuedData != 1 || s.Credits != 0 {
			t.Fatalf("stats after cancel %+v", s)
		}
		// The cancelled buffer was not queued.
		if got, want := drain(g), "0:data[1]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

func TestBlockStopsChannelAndProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const credits = 2
		p := NewPool[int](1)
		g := NewGate(2, credits)
		var sent atomic.Int64
		done := make(chan error)
		go func() {
			for i := range 6 {
				if err := g.Channel(0).Send(context.Background(), dataBuf(p, i)); err != nil {
					done <- err
					return
				}
				sent.Add(1)
			}
			done <- g.Channel(0).Send(context.Background(), Buffer{Kind: EndOfPartition})
		}()
		mustSend(t, g.Channel(1), dataBuf(p, 100))
		mustSend(t, g.Channel(1), barrier(1))
		g.Block(0)
		synctest.Wait()
		if got := sent.Load(); got != credits {
			t.Fatalf("blocked channel's producer sent %d, want %d", got, credits)
		}
		// Only channel 1 is polled while channel 0 is blocked.
		if got, want := drain(g), "1:data[100] 1:barrier1"; got != want {
			t.Fatalf("while blocked got %s, want %s", got, want)
		}
		synctest.Wait()
		if got := sent.Load(); got != credits {
			t.Fatalf("blocked channel's producer sent %d after polls of other channels, want %d", got, credits)
		}
		if s := g.Stats().Channels[0]; !s.Blocked || s.QueuedData != credits {
			t.Fatalf("blocked stats %+v", s)
		}
		g.Unblock(0)
		var got []string
		for len(got) < 7 {
			select {
			case <-g.Ready():
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				done = nil
				continue
			}
			for ch, b, ok := g.Poll(); ok; ch, b, ok = g.Poll() {
				got = append(got, describe(ch, b))
			}
		}
		if done != nil {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"0:data[0]", "0:data[1]", "0:data[2]", "0:data[3]", "0:data[4]", "0:data[5]", "0:eop"}
		if len(got) != len(want) {
			t.Fatalf("after unblock got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("after unblock got %v, want %v", got, want)
			}
		}
	})
}

func TestRoundRobinAcrossChannelsWithData(t *testing.T) {
	p := NewPool[int](1)
	g := NewGate(4, 4)
	// Channel 0 is busiest and filled first; channel 2 stays empty.
	for i := range 4 {
		mustSend(t, g.Channel(0), dataBuf(p, i))
	}
	mustSend(t, g.Channel(1), dataBuf(p, 10))
	mustSend(t, g.Channel(1), dataBuf(p, 11))
	mustSend(t, g.Channel(3), dataBuf(p, 30))
	want := "0:data[0] 1:data[10] 3:data[30] 0:data[1] 1:data[11] 0:data[2] 0:data[3]"
	if got := drain(g); got != want {
		t.Fatalf("poll order\n got %s\nwant %s", got, want)
	}
}

func TestBlockedChannelLosesItsTurnAndRejoinsAtTheBack(t *testing.T) {
	p := NewPool[int](1)
	g := NewGate(3, 4)
	for ch := range 3 {
		mustSend(t, g.Channel(ch), dataBuf(p, ch*10))
		mustSend(t, g.Channel(ch), dataBuf(p, ch*10+1))
	}
	g.Block(1)
	g.Block(1) // idempotent
	if _, b, _ := g.Poll(); b.Kind != Data {
		t.Fatal("expected data")
	} else {
		b.Data.(*Batch[int]).Recycle()
	}
	g.UnblockAll()
	g.Unblock(1) // idempotent
	want := "2:data[20] 0:data[1] 1:data[10] 2:data[21] 1:data[11]"
	if got := drain(g); got != want {
		t.Fatalf("poll order\n got %s\nwant %s", got, want)
	}
}

func TestReadySignalsPollableBuffers(t *testing.T) {
	p := NewPool[int](1)
	g := NewGate(2, 4)
	select {
	case <-g.Ready():
		t.Fatal("ready on an empty gate")
	default:
	}
	mustSend(t, g.Channel(0), dataBuf(p, 1))
	mustSend(t, g.Channel(1), dataBuf(p, 2))
	<-g.Ready() // would hang the test if the value were missing
	if _, b, ok := g.Poll(); !ok {
		t.Fatal("nothing polled")
	} else {
		b.Data.(*Batch[int]).Recycle()
	}
	// One buffer remains: Poll must have re-armed Ready.
	select {
	case <-g.Ready():
	default:
		t.Fatal("ready not re-armed while a buffer remains")
	}
	g.Block(1)
	// Spurious wake-ups are allowed, lost ones are not: unblocking re-arms.
	g.Unblock(1)
	select {
	case <-g.Ready():
	default:
		t.Fatal("ready not armed after unblock")
	}
	if got := drain(g); got != "1:data[2]" {
		t.Fatalf("got %s", got)
	}
}

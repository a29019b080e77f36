package network

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Many producers feed one gate through writers, with tiny credits so they
// are backpressured most of the time, while the consumer blocks channels at
// barriers and unblocks them when it runs dry. Two producers share the last
// channel to exercise the hand-over of credit wake-ups between senders. The
// consumer must see every record exactly once, and each producer's records
// in order on its channel.
func TestManyProducersDeliverExactMultiset(t *testing.T) {
	const (
		channels    = 5
		producers   = channels + 1 // the last two share channel channels-1
		perProducer = 4000
		credits     = 2
	)
	rng := rand.New(rand.NewPCG(7, 11))
	ctx := context.Background()
	g := NewGate(channels, credits)
	pool := NewPool[int64](1 + rng.IntN(16))

	var wg sync.WaitGroup
	errs := make(chan error, producers+1)
	for p := range producers {
		ch := min(p, channels-1)
		w := NewWriter([]*Channel{g.Channel(ch)}, Forward[int64](), pool, 0)
		barrierEvery := 50 + rng.IntN(500)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				if err := w.Emit(ctx, int64(p)<<32|int64(i)); err != nil {
					errs <- err
					return
				}
				if i%barrierEvery == 0 {
					if err := w.Broadcast(ctx, Buffer{Kind: Barrier, Barrier: checkpoint.Barrier{ID: checkpoint.ID(i)}}); err != nil {
						errs <- err
						return
					}
				}
			}
			if err := w.Flush(ctx); err != nil {
				errs <- err
			}
		}()
	}
	go func() {
		wg.Wait()
		for ch := range channels {
			if err := g.Channel(ch).Send(ctx, Buffer{Kind: EndOfPartition}); err != nil {
				errs <- err
			}
		}
	}()

	seen := make([][]int, producers) // seen[p][i] = times record i of p arrived
	next := make([]int, producers)   // next expected index per producer
	for p := range seen {
		seen[p] = make([]int, perProducer)
	}
	consumerRng := rand.New(rand.NewPCG(3, 5))
	eops := 0
	for eops < channels {
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-g.Ready():
		}
		for {
			ch, b, ok := g.Poll()
			if !ok {
				// Run dry: everything left is blocked or not yet sent.
				// Unblocking re-arms Ready if a blocked channel has data.
				g.UnblockAll()
				break
			}
			switch b.Kind {
			case Data:
				batch := b.Data.(*Batch[int64])
				for _, r := range batch.Records {
					p, i := int(r>>32), int(r&0xffffffff)
					if min(p, channels-1) != ch {
						t.Fatalf("record of producer %d on channel %d", p, ch)
					}
					if i != next[p] {
						t.Fatalf("producer %d: record %d arrived, want %d", p, i, next[p])
					}
					next[p]++
					seen[p][i]++
				}
				batch.Recycle()
			case Barrier:
				if consumerRng.IntN(2) == 0 {
					g.Block(ch)
				}
			case EndOfPartition:
				eops++
			}
		}
	}
	for p := range seen {
		for i, n := range seen[p] {
			if n != 1 {
				t.Fatalf("producer %d record %d delivered %d times", p, i, n)
			}
		}
	}
	st := g.Stats()
	var waits uint64
	for ch, c := range st.Channels {
		if c.QueuedData != 0 || c.QueuedEvents != 0 || c.Credits != credits || !c.Finished || c.Waiting != 0 {
			t.Fatalf("channel %d at the end: %+v", ch, c)
		}
		waits += c.BackpressureWaits
	}
	if waits == 0 {
		t.Fatal("no producer was ever backpressured; the test does not exercise credits")
	}
	// Batches alive at once never exceed the queued ones (credits per
	// channel, plus one per writer that a barrier's Broadcast flushed
	// without credit: with at least 50 records between barriers and at
	// most 16 per batch, a full batch, which waits until the overdraft is
	// repaid, is sent in between), one open or being-sent batch per writer
	// and the one the consumer is processing, so the pool stays bounded.
	if got, limit := pool.Allocated(), channels*credits+2*producers+1; got > limit {
		t.Fatalf("pool allocated %d batches, bound is %d", got, limit)
	}
}

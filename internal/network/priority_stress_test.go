package network

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Producers behave like tasks with unaligned checkpoints: each overdraws
// its channel (WithOverdraft) and waits for its Debt between batches, never
// inside one, and sends ordinary and priority barriers and priority cancel
// markers. The consumer announces barriers, prioritizes some of them,
// blocks channels at ordinary barriers, and on every priority buffer checks
// what AppendOvertaken says it overtook. Checked per channel: every record
// exactly once and in order, Data Seqs consecutive, an ordinary event's Seq
// equal to the last polled Data (it overtook nothing), a priority buffer's
// overtaken data exactly the next Data polled; and overall that the
// overdraft stayed within its bound and no send ever waited for credit.
func TestPriorityAndOverdraftStress(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { priorityStress(t, seed) })
	}
}

func priorityStress(t *testing.T, seed uint64) {
	const (
		channels     = 4
		perProducer  = 20000
		maxOverdraft = 2
	)
	rng := rand.New(rand.NewPCG(seed, 99))
	credits := 1 + rng.IntN(2)
	batchSize := 1 + rng.IntN(16)
	g := NewGate(channels, credits, WithAnnouncements())
	pool := NewPool[int64](batchSize)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs first: a failing consumer releases the producers
	errs := make(chan error, channels)
	debts := make([]*Debt, channels)
	for p := range channels {
		debts[p] = NewDebt()
		d := debts[p]
		w := NewWriter([]*Channel{g.Channel(p)}, Forward[int64](), pool, 0, WithOverdraft(maxOverdraft, d))
		prng := rand.New(rand.NewPCG(seed, uint64(p)))
		recs := make([]int64, 2*batchSize)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// awaitDebt is the task loop's wait between batches.
			awaitDebt := func() bool {
				for d.InDebt() {
					select {
					case <-d.Ready():
					case <-ctx.Done():
						return false
					}
				}
				return true
			}
			fail := func(err error) { errs <- fmt.Errorf("producer %d: %w", p, err) }
			id := checkpoint.ID(p << 20)
			for i := 0; i < perProducer; {
				if !awaitDebt() {
					return
				}
				// One input batch fills at most maxOverdraft output batches.
				n := min(1+prng.IntN(maxOverdraft*batchSize), perProducer-i)
				for j := range n {
					recs[j] = int64(p)<<32 | int64(i+j)
				}
				if err := w.EmitBatch(ctx, recs[:n]); err != nil {
					fail(err)
					return
				}
				i += n
				var err error
				switch prng.IntN(12) {
				case 0, 1:
					id++
					err = w.Broadcast(ctx, barrier(id))
				case 2:
					id++
					err = w.BroadcastPriority(barrier(id))
				case 3:
					err = w.BroadcastPriority(Buffer{Kind: CancelBarrier, Cancel: id})
				}
				if err != nil {
					fail(err)
					return
				}
			}
			if awaitDebt() {
				if err := w.Broadcast(ctx, Buffer{Kind: EndOfPartition}); err != nil {
					fail(err)
				}
			}
		}()
	}

	crng := rand.New(rand.NewPCG(seed, 1000))
	var (
		lastSeq     [channels]uint64
		next        [channels]int64
		expect      [channels][]any // overtaken batches not polled yet, in order
		announced   [channels]map[checkpoint.ID]bool
		prioritized = map[checkpoint.ID]bool{}
		mustMove    = map[[2]int64]bool{} // {ch, id}: queued when Prioritize(id) ran
		eops        int
		scratch     []any
		counts      = map[string]int{}
		maxSeen     int
	)
	for ch := range announced {
		announced[ch] = map[checkpoint.ID]bool{}
	}
	for eops < channels {
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-g.Ready():
		}
		for {
			ch, b, ok := g.Poll()
			if !ok {
				g.UnblockAll()
				break
			}
			if b.Priority {
				counts["priority "+b.Kind.String()]++
				if b.Seq < lastSeq[ch] {
					t.Fatalf("ch %d: priority %s Seq %d behind polled data %d", ch, b.Kind, b.Seq, lastSeq[ch])
				}
				scratch = g.AppendOvertaken(scratch[:0], ch, b.Seq)
				if uint64(len(scratch)) != b.Seq-lastSeq[ch] {
					t.Fatalf("ch %d: priority %s Seq %d overtook %d batches after Seq %d", ch, b.Kind, b.Seq, len(scratch), lastSeq[ch])
				}
				short, long := scratch, expect[ch]
				if len(short) > len(long) {
					short, long = long, short
				}
				for i := range short {
					if short[i] != long[i] {
						t.Fatalf("ch %d: overtaken batch %d differs between two priority buffers", ch, i)
					}
				}
				expect[ch] = append(expect[ch][:0:0], long...)
			} else if b.Kind != Data && b.Seq != lastSeq[ch] {
				t.Fatalf("ch %d: ordinary %s Seq %d, last polled data %d", ch, b.Kind, b.Seq, lastSeq[ch])
			}
			switch b.Kind {
			case Data:
				if b.Seq != lastSeq[ch]+1 {
					t.Fatalf("ch %d: data Seq %d after %d", ch, b.Seq, lastSeq[ch])
				}
				lastSeq[ch] = b.Seq
				if len(expect[ch]) > 0 {
					if expect[ch][0] != b.Data {
						t.Fatalf("ch %d: polled data Seq %d is not the batch AppendOvertaken returned", ch, b.Seq)
					}
					expect[ch] = expect[ch][1:]
				}
				batch := b.Data.(*Batch[int64])
				for _, r := range batch.Records {
					if p, i := int(r>>32), r&0xffffffff; p != ch || i != next[ch] {
						t.Fatalf("ch %d: record %d of producer %d, want record %d", ch, i, p, next[ch])
					}
					next[ch]++
				}
				batch.Recycle()
			case Announcement:
				announced[ch][b.Barrier.ID] = true
				if crng.IntN(3) == 0 {
					g.Prioritize(b.Barrier.ID)
					prioritized[b.Barrier.ID] = true
					for c := range channels {
						if announced[c][b.Barrier.ID] {
							mustMove[[2]int64{int64(c), int64(b.Barrier.ID)}] = true
						}
					}
				}
			case Barrier:
				id := b.Barrier.ID
				switch {
				case b.Priority && announced[ch][id] && !prioritized[id]:
					t.Fatalf("ch %d: announced barrier %d arrived as priority without Prioritize", ch, id)
				case !b.Priority && !announced[ch][id]:
					t.Fatalf("ch %d: ordinary barrier %d arrived unannounced", ch, id)
				case !b.Priority && mustMove[[2]int64{int64(ch), int64(id)}]:
					t.Fatalf("ch %d: barrier %d stayed in FIFO order although queued at Prioritize", ch, id)
				}
				delete(announced[ch], id)
				if !b.Priority && crng.IntN(2) == 0 {
					g.Block(ch)
				}
				if crng.IntN(4) == 0 {
					// The producer's next barrier: it may be sent before
					// or after this, and before or after another
					// Prioritize replaces the id; either way it must
					// arrive exactly once, in a consistent place.
					g.Prioritize(id + 1)
					prioritized[id+1] = true
				}
				s := g.Stats().Channels[ch]
				maxSeen = max(maxSeen, s.Overdraft)
				if s.Overdraft > maxOverdraft+1 {
					t.Fatalf("ch %d: overdraft %d, bound %d (+1 for the flush before an event)", ch, s.Overdraft, maxOverdraft)
				}
			case EndOfPartition:
				eops++
			}
		}
	}
	for ch := range channels {
		if next[ch] != perProducer || len(expect[ch]) != 0 || len(announced[ch]) != 0 {
			t.Fatalf("ch %d at the end: %d records, %d expected batches, announced %v", ch, next[ch], len(expect[ch]), announced[ch])
		}
		if debts[ch].InDebt() {
			t.Fatalf("producer %d still in debt", ch)
		}
		s := g.Stats().Channels[ch]
		if s.QueuedData != 0 || s.QueuedEvents != 0 || s.PriorityQueued != 0 || s.Credits != credits || s.Overdraft != 0 {
			t.Fatalf("ch %d at the end: %+v", ch, s)
		}
		// A producer that waits for its debt between batches and emits at
		// most maxOverdraft batches per input batch never waits in Send.
		if s.BackpressureWaits != 0 {
			t.Fatalf("ch %d: %d sends waited for credit inside a batch", ch, s.BackpressureWaits)
		}
	}
	if maxSeen == 0 || counts["priority barrier"] == 0 || counts["priority cancel"] == 0 || len(prioritized) == 0 {
		t.Fatalf("the run did not exercise overdraft (max %d), priority events %v or Prioritize (%d)", maxSeen, counts, len(prioritized))
	}
}

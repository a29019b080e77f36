package weakrt

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/weak"
)

// weakConsumer polls one gate channel and remembers every record and the
// position after each buffer.
type weakConsumer struct {
	g    *network.Gate
	got  []int
	pos  weak.Position
	snap weak.Position // a snapshot position, set by the test
}

func (c *weakConsumer) pollAll(t *testing.T, until int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.got) < until {
		_, b, ok := c.g.Poll()
		if !ok {
			if time.Now().After(deadline) {
				t.Fatalf("consumer has %d records, waited for %d", len(c.got), until)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		c.pos = weak.Position{Buffers: b.LogBuffers, Records: b.LogRecords}
		if b.Kind == network.Data {
			bt := b.Data.(*network.Batch[int])
			c.got = append(c.got, bt.Records...)
			bt.Recycle()
		}
	}
}

func sendRange(t *testing.T, s *weakSender, pool *network.Pool[int], from, to, size int) {
	t.Helper()
	for i := from; i < to; i += size {
		b := pool.Get()
		for j := i; j < min(i+size, to); j++ {
			b.Records = append(b.Records, j)
		}
		if err := s.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: b}, 2, nil); err != nil {
			t.Error(err) // (from the producer goroutine: no Fatal)
			return
		}
	}
}

// TestWeakSenderConsumerRestart: a consumer fails after its snapshot; its
// next attempt reconnects at the snapshot's position and reads every
// record after it exactly once, whatever the producer sent meanwhile.
func TestWeakSenderConsumerRestart(t *testing.T) {
	st := &jobstatus.WeakStats{}
	s := newWeakSender(1000, st)
	pool := network.NewPool[int](10)
	g1 := network.NewGate(1, 4)
	s.connect(g1.Channel(0))
	c1 := &weakConsumer{g: g1}
	go sendRange(t, s, pool, 0, 40, 10)
	c1.pollAll(t, 20)
	snap := c1.pos // the consumer's snapshot
	c1.pollAll(t, 40)
	// It fails: its producer keeps sending into the log.
	s.disconnect(g1.Channel(0))
	sendRange(t, s, pool, 40, 70, 10)
	g2 := network.NewGate(1, 4)
	done := make(chan error, 1)
	if _, err := s.reconnect(context.Background(), g2.Channel(0), snap, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	c2 := &weakConsumer{g: g2}
	go sendRange(t, s, pool, 70, 100, 10)
	c2.pollAll(t, 80)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, r := range c2.got {
		if r != 20+i {
			t.Fatalf("restarted consumer's record %d is %d, want %d (got %v)", i, r, 20+i, c2.got)
		}
	}
	if got := st.Replayed.Load(); got != 20 {
		t.Errorf("replayed %d records, want the 20 sent after the snapshot to the failed attempt", got)
	}
	if st.Lost.Load() != 0 {
		t.Errorf("lost %d", st.Lost.Load())
	}
}

// TestWeakSenderProducerRestart: a producer restarted from its snapshot
// emits again what its log holds; the consumer, which kept running, sees
// every record once.
func TestWeakSenderProducerRestart(t *testing.T) {
	st := &jobstatus.WeakStats{}
	s := newWeakSender(1000, st)
	pool := network.NewPool[int](10)
	g := network.NewGate(1, 8)
	s.connect(g.Channel(0))
	c := &weakConsumer{g: g}
	sendRange(t, s, pool, 0, 30, 10)
	// The producer's snapshot was at 15 records; it fails at 30 and
	// re-emits from 15 in batches of another size.
	if err := s.restart(15, false, false); err != nil {
		t.Fatal(err)
	}
	go sendRange(t, s, pool, 15, 50, 7)
	c.pollAll(t, 50)
	for i, r := range c.got {
		if r != i {
			t.Fatalf("record %d is %d: %v", i, r, c.got)
		}
	}
}

// TestWeakSenderSmallLogCountsLoss: with a log smaller than what a
// consumer's snapshot left uncovered, the restarted consumer misses
// exactly the records counted as lost.
func TestWeakSenderSmallLogCountsLoss(t *testing.T) {
	st := &jobstatus.WeakStats{}
	s := newWeakSender(10, st)
	s.to = &taskWeak{}
	pool := network.NewPool[int](5)
	g1 := network.NewGate(1, 100)
	s.connect(g1.Channel(0))
	sendRange(t, s, pool, 0, 40, 5)
	c1 := &weakConsumer{g: g1}
	c1.pollAll(t, 40)
	s.disconnect(g1.Channel(0))
	g2 := network.NewGate(1, 100)
	done := make(chan error, 1)
	lost, err := s.reconnect(context.Background(), g2.Channel(0), weak.Position{}, func(err error) { done <- err })
	if err != nil {
		t.Fatal(err)
	}
	<-done
	c2 := &weakConsumer{g: g2}
	c2.pollAll(t, 40-int(lost))
	if lost != 30 || st.Lost.Load() != 30 || c2.got[0] != 30 {
		t.Fatalf("lost %d (stat %d), first replayed %d; want 30 lost and replay from record 30", lost, st.Lost.Load(), c2.got[0])
	}
	if got := s.to.lost.Load(); got != 30 {
		t.Errorf("the consumer's own figures say %d lost, the job's 30", got)
	}
}

// BenchmarkWeakSenderOverhead sends batches of 1024 ints to a consumer that
// polls and recycles them, through a plain channel and through a weak
// sender whose consumer completes a snapshot every 64 batches (truncating
// the log): the cost per batch of logging (one copy of the batch) and
// stamping.
func BenchmarkWeakSenderOverhead(b *testing.B) {
	const size = 1024
	run := func(b *testing.B, weakMode bool) {
		pool := network.NewPool[int](size)
		g := network.NewGate(1, 8)
		var send network.Sender = g.Channel(0)
		var s *weakSender
		if weakMode {
			s = newWeakSender(1<<20, &jobstatus.WeakStats{})
			s.connect(g.Channel(0))
			send = s
		}
		var pos weak.Position
		b.ReportAllocs()
		b.SetBytes(size * 8)
		for i := 0; b.Loop(); i++ {
			bt := pool.Get()
			for j := range size {
				bt.Records = append(bt.Records, j)
			}
			if err := send.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: bt}, 2, nil); err != nil {
				b.Fatal(err)
			}
			_, got, _ := g.Poll()
			pos = weak.Position{Buffers: got.LogBuffers, Records: got.LogRecords}
			got.Data.(*network.Batch[int]).Recycle()
			if weakMode && i%64 == 63 {
				if err := s.truncate(pos); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("channel", func(b *testing.B) { run(b, false) })
	b.Run("weak", func(b *testing.B) { run(b, true) })
}

// connect makes ch the channel of a consumer that starts at the log's
// start, without a replay goroutine: the tests' shortcut.
func (s *weakSender) connect(ch weakTarget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setCurrent(ch)
	s.gen++
	s.target = ch
	s.release()
}

// goneTarget is a consumer that went away: every send fails.
type goneTarget struct{}

func (goneTarget) Send(context.Context, network.Buffer) error { return network.ErrConsumerGone }
func (goneTarget) SendOverdraft(context.Context, network.Buffer, int, *network.Debt) error {
	return network.ErrConsumerGone
}
func (goneTarget) BackpressureWaits() uint64 { return 0 }

func (goneTarget) BackpressureTime() time.Duration { return 0 }
func (goneTarget) Abandon()                        {}

// TestWeakSenderWaitsForAGoneRemoteConsumer: once a send finds the
// consumer gone (a remote consumer's channel failed; nothing disconnects
// it here), a producer that fills the log waits for the next consumer
// instead of spinning.
func TestWeakSenderWaitsForAGoneRemoteConsumer(t *testing.T) {
	pool := network.NewPool[int](8)
	s := newWeakSender(20, &jobstatus.WeakStats{})
	s.connect(goneTarget{})
	sendRange(t, s, pool, 0, 8, 4) // the first send finds the consumer gone
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start, cpu0 := time.Now(), processCPU(t)
	var err error
	for i := 8; err == nil && i < 100; i += 4 {
		b := pool.Get()
		b.Records = append(b.Records, i, i+1, i+2, i+3)
		err = s.SendOverdraft(ctx, network.Buffer{Kind: network.Data, Data: b}, 2, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "waiting for a restarted consumer") {
		t.Fatalf("the producer filled the log without waiting: %v", err)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("returned after %v, before its context ended", el)
	}
	// Waiting, not spinning: a spin burns the whole 300 ms.
	if used := processCPU(t) - cpu0; used > 150*time.Millisecond {
		t.Errorf("the wait used %v of CPU in 300 ms: the producer spins", used)
	}
}

// processCPU is the CPU time the test process used so far.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package weakrt

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/network/wire"
)

// sendAsync sends records [from, to) in batches of size on its own
// goroutine and reports the first error (or nil) when done.
func sendAsync(s *weakSender, pool *network.Pool[int], from, to, size int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := from; i < to; i += size {
			b := pool.Get()
			for j := i; j < min(i+size, to); j++ {
				b.Records = append(b.Records, j)
			}
			if err := s.SendOverdraft(context.Background(), network.Buffer{Kind: network.Data, Data: b}, 2, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// TestWeakPeersFinishedConsumer: a producer restarted after the
// TaskManager that held its log was lost waits for its consumer's position
// before it logs anything; a consumer that finished never sends one.
// WeakPeers naming it finished releases the producer, and what it sends
// is discarded, logged nowhere; a log created later for that consumer
// discards from the start.
func TestWeakPeersFinishedConsumer(t *testing.T) {
	r := newWeakRegistry(100, &jobstatus.WeakStats{}, time.Now)
	producer, consumer := checkpoint.TaskID{Vertex: 0}, checkpoint.TaskID{Vertex: 1}
	s, _ := r.sender(weakKey{producer: producer}, consumer)
	if err := s.restart(10, false, true); err != nil {
		t.Fatal(err)
	}
	pool := network.NewPool[int](10)
	done := sendAsync(s, pool, 10, 40, 5)
	select {
	case err := <-done:
		t.Fatalf("a producer whose log waits for its consumer's position sent (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.peers(deployment.WeakPeersUpdate{Finished: []checkpoint.TaskID{consumer}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer still waits after its consumer finished")
	}
	if s.log.End() != 0 {
		t.Fatalf("a finished consumer's log holds %d entries, want none", s.log.End())
	}
	later, _ := r.sender(weakKey{producer: checkpoint.TaskID{Vertex: 0, Subtask: 1}}, consumer)
	if err := <-sendAsync(later, pool, 0, 10, 5); err != nil || later.log.End() != 0 {
		t.Fatalf("a log created after its consumer finished: err %v, %d entries; want it to discard", err, later.log.End())
	}
}

// TestWeakPeersMovedHere: a consumer's remote producer restarts in the
// consumer's own TaskManager (its TaskManager was lost). The consumer
// keeps running: its gate channel is connected to the producer's new log
// here at the position of the last buffer it received, and the producer's
// re-emission up to that position is skipped, so it reads every record
// once. A channel that had ended only tells the new log its position:
// nothing reaches the gate, and the producer never waits for it.
func TestWeakPeersMovedHere(t *testing.T) {
	for _, ended := range []bool{false, true} {
		r := newWeakRegistry(100, &jobstatus.WeakStats{}, time.Now)
		producer, consumer := checkpoint.TaskID{Vertex: 0}, deployment.ExecutionID{Task: checkpoint.TaskID{Vertex: 1}}
		key := weakKey{producer: producer}
		g := network.NewGate(1, 4)
		w := &weakRemoteIn{self: "tm-a"}
		ctx := context.Background()
		if _, err := r.connectInputs(ctx, consumer, []weakKey{key}, g, []*weakRemoteIn{w}, nil, func(err error) { t.Error(err) }); err != nil {
			t.Fatal(err)
		}
		// The producer restored at 5 records; the consumer had received
		// 8 in 3 buffers from its lost attempt.
		s, _ := r.sender(key, consumer.Task)
		if err := s.restart(5, false, true); err != nil {
			t.Fatal(err)
		}
		if err := w.local(wire.LogPos{Buffers: 3, Records: 8}, ended); err != nil {
			t.Fatal(err)
		}
		pool := network.NewPool[int](10)
		done := sendAsync(s, pool, 5, 20, 4)
		if ended {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, b, ok := g.Poll(); ok {
				t.Fatalf("an ended channel got %s", b.Kind)
			}
			continue
		}
		c := &weakConsumer{g: g}
		c.pollAll(t, 12)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if want := []int{8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}; !slices.Equal(c.got, want) {
			t.Fatalf("the consumer read %v after the move, want %v", c.got, want)
		}
		if c.pos.Buffers <= 3 || c.pos.Records != 20 {
			t.Fatalf("position after the move %s, want past 3 buffers and at 20 records", c.pos)
		}
	}
}

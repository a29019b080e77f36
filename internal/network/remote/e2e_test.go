package remote

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
)

// consumerLog is what a consumer task saw on one gate.
type consumerLog struct {
	values  [][]int64  // by channel, in arrival order
	events  [][]string // by channel: "barrier1@<records before>" etc.
	cum     [][]int    // by channel: records in Data with Seq <= s, at index s
	prioSeq map[string]uint64
	err     error
}

// consume polls g like a task until every channel delivered end of
// partition, decoding and releasing serialized batches.
func consume(ctx context.Context, g *network.Gate) *consumerLog {
	n := g.NumChannels()
	l := &consumerLog{values: make([][]int64, n), events: make([][]string, n), cum: make([][]int, n), prioSeq: map[string]uint64{}}
	for i := range n {
		l.cum[i] = []int{0}
	}
	ended := 0
	for ended < n {
		select {
		case <-ctx.Done():
			l.err = ctx.Err()
			return l
		case <-g.Ready():
		}
		for ch, b, ok := g.Poll(); ok; ch, b, ok = g.Poll() {
			switch b.Kind {
			case network.Data:
				s := b.Data.(*network.Serialized)
				before := len(l.values[ch])
				var err error
				l.values[ch], err = decodeInt64s(l.values[ch], s.Bytes)
				if err == nil && len(l.values[ch])-before != s.Records {
					err = fmt.Errorf("batch says %d records, holds %d", s.Records, len(l.values[ch])-before)
				}
				if err == nil && b.Seq != uint64(len(l.cum[ch])) {
					err = fmt.Errorf("channel %d: data seq %d, want %d", ch, b.Seq, len(l.cum[ch]))
				}
				if err != nil && l.err == nil {
					l.err = err
				}
				l.cum[ch] = append(l.cum[ch], len(l.values[ch]))
				s.Release()
			case network.EndOfPartition:
				ended++
				l.events[ch] = append(l.events[ch], "eop")
			default:
				name := describeBuf(ch, b)[2:]
				if b.Priority {
					l.prioSeq[fmt.Sprintf("%d:%s", ch, name)] = b.Seq
					name = "prio-" + name
				}
				l.events[ch] = append(l.events[ch], fmt.Sprintf("%s@%d", name, len(l.values[ch])))
			}
		}
	}
	return l
}

// TestRemoteShuffleIsExact runs two producer subtasks on one TaskManager
// and two consumer subtasks on another, all channels remote, with
// barriers, a priority barrier, watermarks, watermark status changes, end
// of data and end of partition in band.
// Every record arrives exactly once, in order per channel; every ordinary
// barrier, watermark and status change follows exactly the records emitted
// before it on its channel;
// the priority barrier's Seq covers exactly the records emitted before it.
func TestRemoteShuffleIsExact(t *testing.T) {
	const (
		producers, consumers = 2, 2
		credits              = 4
		n                    = 20000
	)
	a, b := newTM(t, "tm-a"), newTM(t, "tm-b")
	_, cb := connect(t, a, b)
	ctx := context.Background()
	fails := newFailures()

	gates := make([]*network.Gate, consumers)
	for c := range consumers {
		gates[c] = network.NewGate(producers, credits)
		for p := range producers {
			if _, err := cb.OpenInput(InputConfig{Key: key(p, c), Gate: gates[c], Channel: p, OnFailure: fails.record}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logs := make([]*consumerLog, consumers)
	done := make(chan int)
	for c := range consumers {
		go func() { logs[c] = consume(ctx, gates[c]); done <- c }()
	}

	route := func(r int64, n int) int { return int(r % int64(n)) }
	type mark struct {
		name   string
		before [consumers]int
	}
	expect := make([][]mark, producers)
	errs := make(chan error, producers)
	var allOuts []*OutChannel
	for p := range producers {
		outs := []*OutChannel{outChannel(t, a, p, 0, credits), outChannel(t, a, p, 1, credits)}
		allOuts = append(allOuts, outs...)
		go func() {
			w := network.NewWriter(outs, network.Custom(route), network.NewPool[int64](16), p, network.WithOverdraft(2, network.NewDebt()))
			var sent [consumers]int
			note := func(name string) { expect[p] = append(expect[p], mark{name, sent}) }
			for i := range n {
				v := int64(p)*1_000_000_000 + int64(i)
				switch i {
				case 5000, 12000:
					id := checkpoint.ID(1 + i/12000)
					if err := w.Broadcast(ctx, network.Buffer{Kind: network.Barrier, Barrier: checkpoint.Barrier{ID: id}}); err != nil {
						errs <- err
						return
					}
					note(fmt.Sprintf("barrier%d", id))
				case 3000, 15000:
					// A watermark follows exactly the records emitted
					// before it, like an ordinary barrier.
					ts := int64(i)*10 + int64(p)
					if err := w.Broadcast(ctx, network.Buffer{Kind: network.Watermark, Watermark: ts}); err != nil {
						errs <- err
						return
					}
					note(fmt.Sprintf("wm%d", ts))
				case 9000, 9500:
					idle := i == 9000
					if err := w.Broadcast(ctx, network.Buffer{Kind: network.WatermarkStatus, Idle: idle}); err != nil {
						errs <- err
						return
					}
					note(map[bool]string{true: "idle", false: "active"}[idle])
				case 7777:
					if err := w.BroadcastPriority(network.Buffer{Kind: network.Barrier, Barrier: checkpoint.Barrier{ID: 3}}); err != nil {
						errs <- err
						return
					}
					note("prio-barrier3")
				}
				if err := w.Emit(ctx, v); err != nil {
					errs <- err
					return
				}
				sent[route(v, consumers)]++
			}
			for _, k := range []network.Kind{network.EndOfData, network.EndOfPartition} {
				if err := w.Broadcast(ctx, network.Buffer{Kind: k}); err != nil {
					errs <- err
					return
				}
				note(k.String())
			}
			errs <- nil
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for range consumers {
		<-done
	}
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}

	seen := map[int64]int{}
	for c, l := range logs {
		if l.err != nil {
			t.Fatalf("consumer %d: %v", c, l.err)
		}
		for p := range producers {
			vs := l.values[p]
			if !slices.IsSorted(vs) {
				t.Fatalf("consumer %d channel %d: records out of order", c, p)
			}
			for _, v := range vs {
				seen[v]++
				if int(v/1_000_000_000) != p || route(v, consumers) != c {
					t.Fatalf("record %d on consumer %d channel %d", v, c, p)
				}
			}
			var want []string
			for _, m := range expect[p] {
				before := m.before[c]
				if m.name == "prio-barrier3" {
					// Where a priority barrier lands is up to timing; what
					// it overtook is not: its Seq covers exactly the
					// records emitted before it.
					seq := l.prioSeq[fmt.Sprintf("%d:barrier3", p)]
					if got := l.cum[p][seq]; got != before {
						t.Fatalf("consumer %d channel %d: priority barrier seq %d covers %d records, %d were emitted before it", c, p, seq, got, before)
					}
					continue
				}
				want = append(want, fmt.Sprintf("%s@%d", m.name, before))
			}
			want[len(want)-1] = "eop"
			got := slices.DeleteFunc(slices.Clone(l.events[p]), func(s string) bool { return len(s) > 5 && s[:5] == "prio-" })
			if !slices.Equal(got, want) {
				t.Fatalf("consumer %d channel %d: events\n%v\nwant\n%v", c, p, got, want)
			}
		}
	}
	if len(seen) != producers*n {
		t.Fatalf("%d distinct records, want %d", len(seen), producers*n)
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("record %d arrived %d times", v, k)
		}
	}
	checkTraffic(t, a, b, allOuts, producers*n)
}

// checkTraffic checks the managers' Traffic after every record of a
// one-way shuffle from a to b arrived: a sent exactly the records and the
// bytes its OutChannels counted, b received exactly those, and nothing
// went the other way.
func checkTraffic(t *testing.T, a, b *tm, outs []*OutChannel, records int) {
	t.Helper()
	var bytes, buffers uint64
	for _, o := range outs {
		s := o.Stats()
		bytes += s.SentBytes
		buffers += s.SentData
	}
	sent, recv := a.mgr.Traffic(), b.mgr.Traffic()
	want := TrafficStats{BuffersSent: buffers, BytesSent: bytes, RecordsSent: uint64(records)}
	if sent != want {
		t.Errorf("sender's traffic %+v, want %+v", sent, want)
	}
	want = TrafficStats{BuffersReceived: buffers, BytesReceived: bytes, RecordsReceived: uint64(records)}
	if recv != want {
		t.Errorf("receiver's traffic %+v, want %+v", recv, want)
	}
	if bytes == 0 {
		t.Error("no bytes sent")
	}
}

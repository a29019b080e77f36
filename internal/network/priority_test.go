package network

import (
	"fmt"
	"strings"
	"testing"
)

// describeSeq is describe with the buffer's Seq ("@n") and a "!" before
// the kind of a priority buffer.
func describeSeq(ch int, b Buffer) string {
	s := describe(ch, b)
	if b.Kind == Announcement {
		s = fmt.Sprintf("%d:announce%d", ch, b.Barrier.ID)
	}
	if b.Priority {
		s = strings.Replace(s, ":", ":!", 1)
	}
	return fmt.Sprintf("%s@%d", s, b.Seq)
}

func drainSeq(g *Gate) string {
	var out []string
	for ch, b, ok := g.Poll(); ok; ch, b, ok = g.Poll() {
		out = append(out, describeSeq(ch, b))
	}
	return strings.Join(out, " ")
}

func mustSendPriority(t *testing.T, c *Channel, b Buffer) {
	t.Helper()
	if err := c.SendPriority(b); err != nil {
		t.Fatal(err)
	}
}

func isReady(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSendStampsSeq(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	c := g.Channel(0)
	mustSend(t, c, barrier(1)) // before any data: 0
	mustSend(t, c, dataBuf(p, 1))
	mustSend(t, c, dataBuf(p, 2))
	mustSend(t, c, Buffer{Kind: CancelBarrier, Cancel: 1, Seq: 99, Priority: true}) // sender's values are overwritten
	mustSend(t, c, dataBuf(p, 3))
	mustSend(t, g.Channel(1), dataBuf(p, 10)) // Seqs are per channel
	mustSend(t, c, Buffer{Kind: EndOfPartition})
	want := "0:barrier1@0 1:data[10]@1 0:data[1]@1 0:data[2]@2 0:cancel1@2 0:data[3]@3 0:eop@3"
	if got := drainSeq(g); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A priority event overtakes the data and ordinary events of its channel,
// and of every other channel, but keeps its place behind earlier priority
// events; its Seq still names its position in its own channel.
func TestSendPriorityOvertakesDataButNotPriorityEvents(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	c0, c1 := g.Channel(0), g.Channel(1)
	mustSend(t, c0, dataBuf(p, 1))
	mustSend(t, c0, barrier(4))
	mustSend(t, c0, dataBuf(p, 2))
	mustSend(t, c1, dataBuf(p, 10))
	mustSendPriority(t, c1, barrier(5))
	mustSendPriority(t, c0, barrier(5))
	mustSend(t, c0, dataBuf(p, 3))
	mustSendPriority(t, c0, Buffer{Kind: CancelBarrier, Cancel: 5})
	if s := g.Stats().Channels[0]; s.PriorityQueued != 2 || s.QueuedEvents != 1 || s.QueuedData != 3 || s.SentEvents != 3 {
		t.Fatalf("stats %+v", s)
	}
	want := "1:!barrier5@1 0:!barrier5@2 0:!cancel5@3 " +
		"0:data[1]@1 1:data[10]@1 0:barrier4@1 0:data[2]@2 0:data[3]@3"
	if got := drainSeq(g); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if s := g.Stats().Channels[0]; s.PriorityQueued != 0 {
		t.Fatalf("stats after drain %+v", s)
	}
}

func TestSendPriorityRefusesDataAndEndsAndEndedChannels(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(1, 8)
	c := g.Channel(0)
	for _, b := range []Buffer{dataBuf(p, 1), {Kind: EndOfData}, {Kind: EndOfPartition}} {
		if err := c.SendPriority(b); err == nil {
			t.Fatalf("priority send of %s succeeded", b.Kind)
		}
	}
	mustSend(t, c, Buffer{Kind: EndOfPartition})
	if err := c.SendPriority(barrier(1)); err == nil {
		t.Fatal("priority send after end of partition succeeded")
	}
	if got := drainSeq(g); got != "0:eop@0" {
		t.Fatalf("got %s", got)
	}
}

// A blocked channel's data waits, but its priority events are delivered.
func TestPriorityEventsOfBlockedChannelsAreDelivered(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	mustSend(t, g.Channel(0), dataBuf(p, 1))
	mustSend(t, g.Channel(0), barrier(1))
	if got := drainSeq(g); got != "0:data[1]@1 0:barrier1@1" {
		t.Fatalf("got %s", got)
	}
	g.Block(0)
	isReady(g.Ready()) // consume a stale value
	mustSend(t, g.Channel(0), dataBuf(p, 2))
	if isReady(g.Ready()) {
		t.Fatal("ready for data of a blocked channel")
	}
	mustSendPriority(t, g.Channel(0), Buffer{Kind: CancelBarrier, Cancel: 1})
	if !isReady(g.Ready()) {
		t.Fatal("ready not raised for a priority event of a blocked channel")
	}
	if got := drainSeq(g); got != "0:!cancel1@2" {
		t.Fatalf("while blocked got %s", got)
	}
	g.UnblockAll()
	if got := drainSeq(g); got != "0:data[2]@2" {
		t.Fatalf("after unblock got %s", got)
	}
}

func TestPollPriorityAndPriorityReady(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	if isReady(g.PriorityReady()) {
		t.Fatal("priority ready on an empty gate")
	}
	mustSend(t, g.Channel(0), dataBuf(p, 1))
	if isReady(g.PriorityReady()) {
		t.Fatal("priority ready for data")
	}
	if _, _, ok := g.PollPriority(); ok {
		t.Fatal("PollPriority returned data")
	}
	mustSendPriority(t, g.Channel(1), barrier(2))
	mustSendPriority(t, g.Channel(0), barrier(2))
	if !isReady(g.PriorityReady()) {
		t.Fatal("priority ready not raised")
	}
	ch, b, ok := g.PollPriority()
	if got := describeSeq(ch, b); !ok || got != "1:!barrier2@0" {
		t.Fatalf("PollPriority: %s %v", got, ok)
	}
	if !isReady(g.PriorityReady()) {
		t.Fatal("priority ready not re-raised while a priority event is left")
	}
	// Poll serves the rest of the section first and clears the value, so a
	// task waiting for priority events does not wake for nothing.
	mustSendPriority(t, g.Channel(1), Buffer{Kind: CancelBarrier, Cancel: 2})
	if got := drainSeq(g); got != "0:!barrier2@1 1:!cancel2@0 0:data[1]@1" {
		t.Fatalf("got %s", got)
	}
	if isReady(g.PriorityReady()) {
		t.Fatal("priority ready left raised after the section was served")
	}
	if _, _, ok := g.PollPriority(); ok {
		t.Fatal("PollPriority on an empty section")
	}
}

// AppendOvertaken returns exactly the queued data a priority barrier
// overtook, without taking it from the queue.
func TestAppendOvertaken(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(2, 8)
	c0 := g.Channel(0)
	var sent []Buffer
	for i := range 4 {
		b := dataBuf(p, i)
		sent = append(sent, b)
		mustSend(t, c0, b)
		if i == 1 {
			mustSend(t, c0, barrier(1)) // events are skipped
		}
	}
	mustSend(t, g.Channel(1), dataBuf(p, 10))
	// Poll one, so the queue starts at Seq 2.
	if _, b, _ := g.Poll(); b.Seq != 1 {
		t.Fatalf("first poll Seq %d", b.Seq)
	} else {
		b.Data.(*Batch[int]).Recycle()
	}
	mustSendPriority(t, c0, barrier(2)) // Seq 4: overtakes data 2..4
	mustSend(t, c0, dataBuf(p, 4))      // Seq 5: after the barrier
	ch, pb, _ := g.Poll()
	if !pb.Priority || ch != 0 || pb.Seq != 4 {
		t.Fatalf("expected the priority barrier, got %s", describeSeq(ch, pb))
	}
	scratch := make([]any, 0, 8)
	got := g.AppendOvertaken(scratch[:0], 0, pb.Seq)
	if len(got) != 3 || got[0] != sent[1].Data || got[1] != sent[2].Data || got[2] != sent[3].Data {
		t.Fatalf("overtaken %v, want the batches with Seq 2..4", got)
	}
	if o := g.AppendOvertaken(nil, 0, 1); len(o) != 0 {
		t.Fatalf("Seq 1 was polled already, got %v", o)
	}
	if o := g.AppendOvertaken(nil, 1, 0); len(o) != 0 {
		t.Fatalf("nothing of channel 1 has Seq 0, got %v", o)
	}
	if o := g.AppendOvertaken([]any{"x"}, 0, 2); len(o) != 2 || o[0] != "x" || o[1] != sent[1].Data {
		t.Fatalf("append to dst: %v", o)
	}
	// Nothing was taken from the queue.
	if s := g.Stats().Channels[0]; s.QueuedData != 4 || s.Credits != 4 {
		t.Fatalf("stats %+v", s)
	}
	// Channel 0 went to the back of the round robin at the first poll.
	want := "1:data[10]@1 0:data[1]@2 0:barrier1@2 0:data[2]@3 0:data[3]@4 0:data[4]@5"
	if got := drainSeq(g); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Prioritize moves the queued barriers of one checkpoint into the priority
// section with their Seqs, from blocked channels too, and later barriers of
// that checkpoint skip the queue; other checkpoints are not affected.
func TestPrioritizeQueuedAndLaterBarriers(t *testing.T) {
	p := NewPool[int](4)
	g := NewGate(4, 8)
	mustSend(t, g.Channel(0), dataBuf(p, 1))
	mustSend(t, g.Channel(0), barrier(3))
	mustSend(t, g.Channel(0), dataBuf(p, 2))
	mustSend(t, g.Channel(1), barrier(2))
	mustSend(t, g.Channel(1), dataBuf(p, 10))
	mustSend(t, g.Channel(1), barrier(3))
	mustSend(t, g.Channel(2), barrier(3)) // its only buffer: the channel must leave the round robin
	g.Block(1)
	g.Prioritize(3)
	mustSend(t, g.Channel(3), dataBuf(p, 30))
	mustSend(t, g.Channel(3), barrier(3)) // sent after Prioritize: straight to the section
	mustSend(t, g.Channel(3), barrier(4))
	if s := g.Stats(); s.Channels[0].PriorityQueued != 1 || s.Channels[0].QueuedEvents != 0 ||
		s.Channels[2].QueuedEvents != 0 || s.Channels[3].PriorityQueued != 1 || s.Channels[3].QueuedEvents != 1 {
		t.Fatalf("stats %+v", s.Channels)
	}
	want := "0:!barrier3@1 1:!barrier3@1 2:!barrier3@0 3:!barrier3@1 " +
		"0:data[1]@1 3:data[30]@1 0:data[2]@2 3:barrier4@1"
	if got := drainSeq(g); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	g.UnblockAll()
	if got, want := drainSeq(g), "1:barrier2@0 1:data[10]@1"; got != want {
		t.Fatalf("after unblock got %s, want %s", got, want)
	}
}

// With announcements, an ordinary barrier keeps its FIFO place and an
// announcement of it overtakes; a promoted barrier is not announced.
func TestAnnouncements(t *testing.T) {
	p := NewPool[int](4)
	for _, announce := range []bool{false, true} {
		var opts []GateOption
		if announce {
			opts = append(opts, WithAnnouncements())
		}
		g := NewGate(2, 8, opts...)
		mustSend(t, g.Channel(0), dataBuf(p, 1))
		mustSend(t, g.Channel(0), dataBuf(p, 2))
		mustSend(t, g.Channel(0), barrier(1))
		mustSend(t, g.Channel(1), dataBuf(p, 10))
		mustSend(t, g.Channel(1), barrier(1))
		mustSend(t, g.Channel(1), barrier(2))
		g.Prioritize(2) // moved behind the announcements sent before
		mustSend(t, g.Channel(0), barrier(2))
		mustSend(t, g.Channel(0), Buffer{Kind: CancelBarrier, Cancel: 2}) // only barriers are announced
		want := "1:!barrier2@1 0:!barrier2@2 " +
			"0:data[1]@1 1:data[10]@1 0:data[2]@2 1:barrier1@1 0:barrier1@2 0:cancel2@2"
		if announce {
			want = "0:!announce1@2 1:!announce1@1 1:!announce2@1 " + want
		}
		if got := drainSeq(g); got != want {
			t.Fatalf("announce=%v\n got %s\nwant %s", announce, got, want)
		}
	}
}

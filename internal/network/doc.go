// Package network is the local data plane: the channels that carry records
// and in-band events from the output of one task to the input of another.
//
// Records travel in batches. A producer task owns one Writer per output edge;
// the Writer routes each record with its Partitioner into the open Batch of
// the target channel and sends the batch as one Data Buffer when it is full.
// A consumer task owns one Gate over all of its input channels and polls it
// from its mailbox loop. Per record there is no channel operation, no lock,
// no allocation and no interface boxing: those costs are paid once per batch.
//
// Memory is bounded by credits, as in Flink's credit-based flow control. Each
// channel starts with creditsPerChannel credits granted by the receiver; a
// credit is one free slot for a Data buffer. Sending a Data buffer takes a
// credit and blocks while there is none; polling it returns the credit to the
// producer. A slow consumer therefore stops its producers, and the
// backpressure propagates hop by hop to the sources. Events (barriers, cancel
// markers, end of partition) need no credit, so a barrier is never stuck
// behind a full channel's accounting; there are at most a few per checkpoint.
// The accounting is explicit (ChannelStats.Credits) rather than hidden in the
// capacity of a Go channel, so a remote TCP channel can carry the same
// credits over the wire later.
//
// Walkthrough of one edge with two consumer subtasks:
//
//	pool := network.NewPool[int64](1024)
//	gates := []*network.Gate{network.NewGate(1, 4), network.NewGate(1, 4)}
//	w := network.NewWriter([]*network.Channel{gates[0].Channel(0), gates[1].Channel(0)},
//		network.Hash(hashOf, 128), pool, 0)
//	w.Emit(ctx, 42)                                          // appended to a batch
//	w.Broadcast(ctx, network.Buffer{Kind: network.Barrier})  // flush, then barrier to both
//
//	// consumer task loop
//	for {
//		select {
//		case <-ctx.Done():
//			return ctx.Err()
//		case m := <-mailbox:
//			handle(m)
//		case <-gate.Ready():
//			for ch, buf, ok := gate.Poll(); ok; ch, buf, ok = gate.Poll() {
//				if buf.Kind == network.Data {
//					b := buf.Data.(*network.Batch[int64])
//					process(b.Records)
//					b.Recycle()
//				} else {
//					barrierHandler(ch, buf) // may call gate.Block(ch)
//				}
//			}
//		}
//	}
//
// Barrier alignment uses Block: a blocked channel is skipped by Poll, its
// queued buffers keep their credits, so its producer stalls after at most
// creditsPerChannel buffers (plus its overdraft, below) and the task itself
// buffers nothing. Priority events of a blocked channel are still polled.
//
// Unaligned checkpoints need three more things (docs/design/
// unaligned-checkpoints.md, section 1):
//
//   - Sequence numbers. Send stamps every buffer with its position in the
//     channel (Buffer.Seq): Data buffers count from 1, an event carries the
//     Seq of the last Data before it.
//   - A priority section per gate, which Poll serves first, also for
//     blocked channels. Channel.SendPriority (Writer.BroadcastPriority) puts
//     a barrier or cancel marker there; Gate.Prioritize moves the queued
//     barriers of one checkpoint there (an alignment timed out);
//     WithAnnouncements puts an Announcement of every ordinary barrier
//     there. A priority event keeps its Seq, so it overtook exactly the
//     queued Data of its channel with Seq <= its own, which
//     Gate.AppendOvertaken returns without dequeuing: the channel state the
//     consumer records. An ordinary barrier overtook nothing.
//   - Overdraft. A Writer made WithOverdraft sends a full batch without
//     credit up to a limit per channel and charges the task's Debt, which
//     the task repays by waiting between batches (while handling mail and
//     priority events) instead of blocking in Send inside one. Broadcast
//     and BroadcastPriority send partly filled batches without waiting, so
//     every record emitted before a barrier is queued ahead of it (below
//     its Seq) and no barrier waits for credit. The queue of a channel then
//     holds at most credits + overdraft Data buffers, plus one per event.
//
// Event time rides along with the records. A Writer made WithTimestamps
// sends batches whose Times hold one event timestamp per record
// (EmitTimed, EmitBatchTimed; NoTimestamp for a record without one, which
// costs nothing per record: a batch starts filled with it); other writers
// send nil Times, so edges without event time pay nothing. Watermarks are
// events: Broadcast(Buffer{Kind: Watermark, Watermark: ts}) flushes the open
// batches first, so the watermark follows every record emitted before it,
// and WatermarkStatus (Buffer.Idle) says the producer went idle or became
// active again. Both keep their place in the channel's order: they take no
// credit, wait behind a blocked channel like any ordinary event, and never
// overtake (SendPriority refuses them), because a watermark ahead of its
// records would make them late. They are not channel state: a priority
// barrier overtakes them, and AppendOvertaken returns only Data.
//
// Remote channels (package remote) plug into the same types. A Writer
// writes to Senders: a local *Channel, or a remote.OutChannel that encodes
// each batch and carries it over TCP against credits its consumer grants.
// On the consumer's side the connection reader puts what arrives into an
// ordinary Gate channel with Deliver (never waiting: ErrNoCredit instead)
// and DeliverPriority (keeping the producer's Seq); the payload of such a
// Data buffer is a *Serialized the task decodes and releases; and
// Gate.SetCreditListener tells the connection about every credit a Poll
// returns, which it sends back to the producer.
//
// Locking: one mutex per Gate guards the state of the gate and of all its
// channels. It is taken once per batch or event, never per record, and never
// held while waiting.
//
// Owns: the in-process data plane: batches, pools, partitioners, gates,
// channels, credits and debt. Must not touch: tasks, operators, state or
// checkpoint storage; it carries barriers without knowing what they mean
// (checked by internal/archtest).
package network

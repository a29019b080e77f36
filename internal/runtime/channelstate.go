package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/network"
)

// chunkSize is the size of the pieces the recorder hands to its writer
// goroutine. With chunksQueued of them in flight, a recording task holds at
// most that much channel state in memory; the rest is in the file.
const (
	chunkSize    = 64 << 10
	chunksQueued = 4
)

// errRecorderAborted ends the channel-state part of a snapshot whose
// checkpoint was aborted while it recorded: the asynchronous goroutine exits
// without acknowledging.
var errRecorderAborted = errors.New("channel state recording aborted")

// channelInfo describes one input-gate channel for the channel-state
// handle: which input and producer subtask it carries, and the codec of its
// records.
type channelInfo struct {
	input               int
	producerUID         string
	producerParallelism int
	producer            int
	codec               dataflow.ChannelCodec
}

// channelRecorder records the in-flight records of one unaligned checkpoint
// of one task: the batches its barrier overtook in the input gate and the
// batches polled from channels whose barrier had not arrived yet. The task
// goroutine encodes batches into chunks; a writer goroutine streams the
// chunks into the checkpoint's channel-state file, so memory stays bounded
// however much is recorded.
//
// All methods but result are called from the task goroutine.
type channelRecorder struct {
	id    checkpoint.ID
	chans []channelInfo
	on    []bool // per gate channel: recording now
	// until[c] > 0: channel c delivered a priority barrier whose Seq is
	// until[c] while data before it was still on its way (a remote
	// channel: the barrier jumped the sender's queue, not the bytes on
	// the stream). c keeps recording what it polls up to that Seq.
	until []uint64
	// from[c] is the Seq of the last data of channel c recorded when its
	// barrier was polled (polled before it, or still queued behind it and
	// recorded as overtaken): while c waits for until[c], only data above
	// from[c] is recorded, since the queued part comes through Poll again.
	from []uint64
	// finishing is set when the handler declared the channel state
	// complete while some channel still waits for data below its
	// barrier; the recorder finishes when the last one arrived.
	finishing bool

	chunk   []byte
	scratch []byte
	off     int64 // file offset of chunk[0]
	segs    [][]checkpoint.Segment
	records []int64
	bytes   int64
	limit   int64
	faults  *faults.Injector

	out  chan []byte // full chunks to the writer goroutine
	free chan []byte // chunks the writer is done with
	res  chan recResult
	// handle is set by finish, before done is closed; aborted is set by
	// abort before done is closed. The async goroutine reads them only
	// after done.
	done    chan struct{}
	handle  *checkpoint.ChannelStateHandle
	aborted bool
	closed  bool
	// overflow is set once the channel state passed its bound: nothing
	// more is recorded, and the checkpoint is being aborted.
	overflow bool
	// remoteBytes, if set, counts the bytes recorded from remote
	// channels' encoded batches (jobstatus.JobStatus.RecordedRemoteChannelStateBytes).
	remoteBytes *atomic.Int64
}

type recResult struct {
	file checkpoint.StateFile
	err  error
}

// newChannelRecorder starts recording checkpoint id into the file name,
// written through sw on a new goroutine counted in wg (the task waits for
// it before it ends, so no attempt leaves a writer behind).
func newChannelRecorder(ctx context.Context, id checkpoint.ID, chans []channelInfo, limit int64, inj *faults.Injector, sw dataflow.StateWriter, name string, wg *sync.WaitGroup) *channelRecorder {
	r := &channelRecorder{
		id:      id,
		chans:   chans,
		on:      make([]bool, len(chans)),
		until:   make([]uint64, len(chans)),
		from:    make([]uint64, len(chans)),
		chunk:   storage.AppendChannelStateHeader(make([]byte, 0, chunkSize)),
		segs:    make([][]checkpoint.Segment, len(chans)),
		records: make([]int64, len(chans)),
		limit:   limit,
		faults:  inj,
		out:     make(chan []byte, chunksQueued),
		free:    make(chan []byte, chunksQueued+1),
		res:     make(chan recResult, 1),
		done:    make(chan struct{}),
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := sw.WriteFile(ctx, name, func(w io.Writer) error {
			// Drain every chunk even after a write error: the task must
			// never block on a writer that gave up.
			var werr error
			for c := range r.out {
				if werr == nil {
					_, werr = w.Write(c)
				}
				select {
				case r.free <- c[:0]:
				default:
				}
			}
			return werr
		})
		// Without recorded data the file is only its header; result then
		// returns no handle, and the file goes with its checkpoint folder.
		r.res <- recResult{file: f, err: err}
	}()
	return r
}

// start begins recording gate channel ch.
func (r *channelRecorder) start(ch int) { r.on[ch] = true }

// stop ends recording gate channel ch.
func (r *channelRecorder) stop(ch int) { r.on[ch] = false }

// record appends one batch polled from (or still queued on) channel ch. It
// fails when the channel state outgrows its bound or a fault is injected.
func (r *channelRecorder) record(ctx context.Context, ch int, data any) error {
	if r.overflow {
		return nil
	}
	if err := r.faults.Hit(faults.ChannelState); err != nil {
		return fmt.Errorf("checkpoint %d: record channel state: %w", r.id, err)
	}
	c := r.chans[ch].codec
	r.scratch = c.AppendBatch(r.scratch[:0], data)
	start := r.off + int64(len(r.chunk))
	r.chunk = storage.AppendChannelFrame(r.chunk, ch, r.scratch)
	n := r.off + int64(len(r.chunk)) - start
	r.bytes += n
	r.records[ch] += int64(c.Records(data))
	if _, remote := data.(*network.Serialized); remote && r.remoteBytes != nil {
		r.remoteBytes.Add(n)
	}
	if segs := r.segs[ch]; len(segs) > 0 && segs[len(segs)-1].Offset+segs[len(segs)-1].Length == start {
		segs[len(segs)-1].Length += n
	} else {
		r.segs[ch] = append(segs, checkpoint.Segment{Offset: start, Length: n})
	}
	if r.bytes > r.limit {
		return fmt.Errorf("checkpoint %d: channel state of this subtask exceeds %d bytes (execution.checkpointing.unaligned.max-channel-state-bytes): %w", r.id, r.limit, errChannelStateTooLarge)
	}
	if len(r.chunk) >= chunkSize {
		return r.ship(ctx)
	}
	return nil
}

// stopAll stops recording every channel after an overflow.
func (r *channelRecorder) stopAll() {
	r.overflow = true
	clear(r.on)
	clear(r.until)
	clear(r.from)
}

// awaitUntil keeps channel ch recording polled data up to Seq seq, which
// a priority barrier overtook but which has not reached the gate yet; the
// data up to Seq from is recorded already.
func (r *channelRecorder) awaitUntil(ch int, from, seq uint64) {
	r.on[ch] = true
	r.from[ch] = from
	r.until[ch] = seq
}

// arrived notes that data of Seq seq was recorded on ch; it reports
// whether ch stopped waiting with it.
func (r *channelRecorder) arrived(ch int, seq uint64) bool {
	if r.until[ch] == 0 || seq < r.until[ch] {
		return false
	}
	r.until[ch] = 0
	r.from[ch] = 0
	r.on[ch] = false
	return true
}

// waiting reports whether some channel still waits for overtaken data.
func (r *channelRecorder) waiting() bool {
	for _, u := range r.until {
		if u != 0 {
			return true
		}
	}
	return false
}

// errChannelStateTooLarge declines a checkpoint whose channel state passed
// its bound; the job goes on.
var errChannelStateTooLarge = errors.New("channel state too large")

// ship hands the current chunk to the writer goroutine and takes a free one.
func (r *channelRecorder) ship(ctx context.Context) error {
	full := r.chunk
	r.off += int64(len(full))
	select {
	case r.out <- full:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case c := <-r.free:
		r.chunk = c
	default:
		r.chunk = make([]byte, 0, chunkSize)
	}
	return nil
}

// finish completes the file and builds the handle; the asynchronous
// snapshot goroutine then picks it up with result. The recorder is closed
// afterwards whatever happens, so its writer goroutine ends.
func (r *channelRecorder) finish(ctx context.Context) error {
	if r.closed {
		return nil
	}
	if len(r.chunk) > 0 {
		if err := r.ship(ctx); err != nil {
			// The writer goroutine must still end: the task forgets this
			// recorder once it called finish.
			r.abort()
			return err
		}
	}
	h := &checkpoint.ChannelStateHandle{BatchFormat: checkpoint.ChannelBatchTimed}
	for ch, segs := range r.segs {
		if len(segs) == 0 {
			continue
		}
		info := r.chans[ch]
		h.Channels = append(h.Channels, checkpoint.InputChannelState{
			Input: info.input, ProducerUID: info.producerUID, ProducerParallelism: info.producerParallelism,
			Producer: info.producer, Segments: segs, Records: r.records[ch],
		})
	}
	r.handle = h
	r.close()
	return nil
}

// abort stops recording for good; the asynchronous goroutine exits without
// acknowledging, and the file is discarded with the checkpoint.
func (r *channelRecorder) abort() {
	if r.closed {
		return
	}
	r.aborted = true
	r.close()
}

func (r *channelRecorder) close() {
	r.closed = true
	close(r.out)
	close(r.done)
}

// result waits until the recording finished and its file is written, and
// returns the handle (nil when nothing was recorded). Called from the
// asynchronous snapshot goroutine.
func (r *channelRecorder) result(ctx context.Context) (*checkpoint.ChannelStateHandle, int64, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if r.aborted {
		return nil, 0, errRecorderAborted
	}
	var res recResult
	select {
	case res = <-r.res:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if res.err != nil {
		return nil, 0, fmt.Errorf("write channel state: %w", res.err)
	}
	if len(r.handle.Channels) == 0 {
		return nil, 0, nil
	}
	r.handle.File = res.file
	return r.handle, r.bytes, nil
}

// channelStateFileName names a subtask's channel-state file after its head
// operator, as keyed state files are named.
func channelStateFileName(headUID string, subtask int) string {
	return checkpoint.SubtaskFileName(headUID, subtask, "channel")
}

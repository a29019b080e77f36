package runtime

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/weak"
)

// A producer's snapshot in WEAKLY_CONSISTENT mode stores what its output
// logs retain (everything its consumers' completed snapshots do not cover
// yet) in one file, so that a producer restarted after its TaskManager was
// lost rebuilds them (weak.Log.ResumeWith) and a consumer restarted from
// an older snapshot is replayed what only the lost logs held, instead of
// losing it. The retained batches are encoded on the task goroutine at the
// snapshot (the log reuses their memory as it releases them) and written
// with the snapshot's other files.
//
// Layout, per output channel: uvarint edge, consumer subtask, base
// buffers, base records, entry count; per entry a kind byte, uvarint log
// buffers and records (its stamped position), then for data a uvarint
// length and the batch as the edge's ChannelCodec encodes it, for a
// watermark a zigzag varint, for a status one byte (1: idle).
const (
	logEntryData byte = iota
	logEntryWatermark
	logEntryStatus
	logEntryEndOfData
	logEntryEndOfPartition
	logEntryResumed
)

// weakLogFileName names a task's output log file in a snapshot.
func weakLogFileName(headUID string, subtask int) string {
	return checkpoint.SubtaskFileName(headUID, subtask, "weaklog")
}

// appendLog encodes the log's retained entries as channel (k, j) (mu
// held).
func (s *weakSender) appendLogLocked(dst []byte, k, j int) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(k))
	dst = binary.AppendUvarint(dst, uint64(j))
	dst = binary.AppendUvarint(dst, s.log.Base())
	dst = binary.AppendUvarint(dst, s.log.BaseRecords())
	dst = binary.AppendUvarint(dst, uint64(len(s.payloads)))
	for _, b := range s.payloads {
		switch {
		case b.Kind == network.Data && b.Data == nil:
			dst = append(dst, logEntryResumed)
		case b.Kind == network.Data:
			dst = append(dst, logEntryData)
		case b.Kind == network.Watermark:
			dst = append(dst, logEntryWatermark)
		case b.Kind == network.WatermarkStatus:
			dst = append(dst, logEntryStatus)
		case b.Kind == network.EndOfData:
			dst = append(dst, logEntryEndOfData)
		case b.Kind == network.EndOfPartition:
			dst = append(dst, logEntryEndOfPartition)
		default:
			return nil, fmt.Errorf("output log of edge %d to subtask %d: entry of kind %s cannot be stored", k, j, b.Kind)
		}
		dst = binary.AppendUvarint(dst, b.LogBuffers)
		dst = binary.AppendUvarint(dst, b.LogRecords)
		switch {
		case b.Kind == network.Data && b.Data != nil:
			if s.codec == nil {
				return nil, fmt.Errorf("output log of edge %d to subtask %d: no codec for its records", k, j)
			}
			s.scratch = s.codec.AppendBatch(s.scratch[:0], b.Data)
			dst = binary.AppendUvarint(dst, uint64(len(s.scratch)))
			dst = append(dst, s.scratch...)
		case b.Kind == network.Watermark:
			dst = binary.AppendVarint(dst, b.Watermark)
		case b.Kind == network.WatermarkStatus:
			idle := byte(0)
			if b.Idle {
				idle = 1
			}
			dst = append(dst, idle)
		}
	}
	return dst, nil
}

// snapshotLogs encodes the task's output logs for its snapshot.
func (w *weakTask) snapshotLogs() ([]byte, error) {
	var out []byte
	for k, ws := range w.outs {
		for j, s := range ws {
			s.mu.Lock()
			var err error
			out, err = s.appendLogLocked(out, k, j)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// restoredLog is one output channel's log as a snapshot stored it.
type restoredLog struct {
	base     weak.Position
	entries  []weak.Entry
	payloads []network.Buffer
}

// readLogs decodes a task's output log file: per edge, per consumer
// subtask. codec returns edge k's codec.
func readLogs(r io.Reader, codec func(k int) (ChannelCodec, error)) (map[[2]int]*restoredLog, error) {
	br := bufio.NewReader(r)
	out := map[[2]int]*restoredLog{}
	u := func(what string) (uint64, error) {
		v, err := binary.ReadUvarint(br)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, corruptEOF(err))
		}
		return v, nil
	}
	for {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return out, nil
		}
		var hdr [5]uint64
		for i, what := range []string{"edge", "consumer subtask", "base buffers", "base records", "entry count"} {
			v, err := u(what)
			if err != nil {
				return nil, err
			}
			hdr[i] = v
		}
		k, j := int(hdr[0]), int(hdr[1])
		c, err := codec(k)
		if err != nil {
			return nil, err
		}
		l := &restoredLog{base: weak.Position{Buffers: hdr[2], Records: hdr[3]}}
		prev := hdr[3]
		for e := uint64(0); e < hdr[4]; e++ {
			kind, err := br.ReadByte()
			if err != nil {
				return nil, fmt.Errorf("entry %d of edge %d to subtask %d: %w", e, k, j, corruptEOF(err))
			}
			bufs, err := u("entry position")
			if err != nil {
				return nil, err
			}
			recs, err := u("entry position")
			if err != nil {
				return nil, err
			}
			if recs < prev {
				return nil, fmt.Errorf("entry %d of edge %d to subtask %d: position %d/%d before the previous entry's %d records: corrupt output log", e, k, j, bufs, recs, prev)
			}
			b := network.Buffer{LogBuffers: bufs, LogRecords: recs}
			ent := weak.Entry{Records: recs - prev}
			prev = recs
			switch kind {
			case logEntryData:
				n, err := u("batch length")
				if err != nil {
					return nil, err
				}
				raw := make([]byte, n)
				if _, err := io.ReadFull(br, raw); err != nil {
					return nil, fmt.Errorf("batch of entry %d: %w", e, corruptEOF(err))
				}
				data, _, err := c.DecodeBatch(raw)
				if err != nil {
					return nil, fmt.Errorf("batch of entry %d of edge %d to subtask %d: %w", e, k, j, err)
				}
				b.Kind, b.Data = network.Data, data
			case logEntryResumed:
				b.Kind = network.Data
				ent.Event = weak.EventResumed
			case logEntryWatermark:
				ts, err := binary.ReadVarint(br)
				if err != nil {
					return nil, fmt.Errorf("watermark of entry %d: %w", e, corruptEOF(err))
				}
				b.Kind, b.Watermark = network.Watermark, ts
				ent.Event = weak.EventOther
			case logEntryStatus:
				idle, err := br.ReadByte()
				if err != nil {
					return nil, fmt.Errorf("status of entry %d: %w", e, corruptEOF(err))
				}
				b.Kind, b.Idle = network.WatermarkStatus, idle == 1
				ent.Event = weak.EventOther
			case logEntryEndOfData:
				b.Kind = network.EndOfData
				ent.Event = weak.EventEndOfData
			case logEntryEndOfPartition:
				b.Kind = network.EndOfPartition
				ent.Event = weak.EventEndOfPartition
			default:
				return nil, fmt.Errorf("entry %d of edge %d to subtask %d: kind %d: corrupt output log", e, k, j, kind)
			}
			if kind != logEntryData && ent.Records != 0 {
				return nil, fmt.Errorf("entry %d of edge %d to subtask %d: an event holding %d records: corrupt output log", e, k, j, ent.Records)
			}
			l.entries = append(l.entries, ent)
			l.payloads = append(l.payloads, b)
		}
		out[[2]int{k, j}] = l
	}
}

func corruptEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("output log truncated: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// writeLogs writes the encoded logs as the snapshot's file.
func writeLogs(ctx context.Context, sw StateWriter, name string, data []byte) (*checkpoint.StateFile, error) {
	f, err := sw.WriteFile(ctx, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write output logs: %w", err)
	}
	return &f, nil
}

// weakLogs reads the output logs a subtask of v stored with the snapshot
// whose positions are pos.
func (rp *restorePoint) weakLogs(ctx context.Context, v *Vertex, pos *checkpoint.WeakPositions, batchSize int) (map[[2]int]*restoredLog, error) {
	rc, err := rp.fs.OpenFile(ctx, *pos.Logs)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	last := v.Chain[len(v.Chain)-1]
	return readLogs(rc, func(k int) (ChannelCodec, error) {
		if k < 0 || k >= len(v.Outputs) {
			return nil, fmt.Errorf("output log of edge %d: vertex %q has %d output edges: the snapshot is of another job", k, v.Name(), len(v.Outputs))
		}
		o := v.Outputs[k]
		f := o.Edge.Output(last)
		c, err := f.NewChannelCodec(batchSize)
		if err != nil {
			return nil, edgeCodecError(last, f, o.To, err)
		}
		return c, nil
	})
}

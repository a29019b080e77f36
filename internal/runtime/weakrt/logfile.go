package weakrt

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/weak"
)

// A producer's snapshot in WEAKLY_CONSISTENT mode stores what its output
// logs retain (everything its consumers' completed snapshots do not cover
// yet) in one file, so that a producer restarted after its TaskManager was
// lost rebuilds them (weak.Log.ResumeWith) and a consumer restarted from
// an older snapshot is replayed what only the lost logs held, instead of
// losing it. The retained batches are encoded on the task goroutine at the
// snapshot (the log reuses their memory as it releases them), each once:
// what an earlier snapshot encoded is kept (logcache.go); the
// snapshot's asynchronous part writes the file.
//
// Layout: the header weakLogHeader (format version 2; version 1, written
// by builds before it, has no header and is read as well) and a uvarint
// channel count (so that a file cut after a channel is noticed), then per
// output channel: uvarint edge, consumer subtask, base buffers, base
// records, entry count; per entry a kind byte, uvarint log buffers and
// records (its stamped position), then for data a uvarint length and the
// batch as the edge's ChannelCodec encodes it, for a watermark a zigzag
// varint, for a status one byte (1: idle). The records' own encoding is
// described by the snapshot's state table (the log's channel schema row).
//
// The header starts with 0xFF 0x00, a uvarint no encoder writes (a
// non-minimal zero), so a version 1 file, which starts with the uvarint of
// its first edge, can never be mistaken for a later one.
const (
	weakLogHeader      = "\xff\x00WL\x02"
	weakLogVersion     = 2
	weakLogMagicPrefix = "\xff\x00WL"
)

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

// appendLogLocked adds channel (k, j)'s retained entries to snap (mu
// held): the channel's header, then each entry, encoded now unless an
// earlier snapshot did (logCache).
func (s *weakSender) appendLogLocked(snap *logSnapshot, k, j int) error {
	snap.header(k, j, s.log.Base(), s.log.BaseRecords(), len(s.payloads))
	if err := s.cache.sections(s.payloads, s.codec, snap); err != nil {
		return fmt.Errorf("output log of edge %d to subtask %d: %w", k, j, err)
	}
	return nil
}

// snapshotLogs takes the content of the task's output log file for its
// snapshot, on the task goroutine.
func (w *weakTask) snapshotLogs() (*logSnapshot, error) {
	snap := &logSnapshot{}
	for k, ws := range w.outs {
		for j, s := range ws {
			s.mu.Lock()
			err := s.appendLogLocked(snap, k, j)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
	}
	if snap.size == 0 {
		return nil, nil // no output channel: no file
	}
	snap.scratch = nil
	return snap, nil
}

// restoredLog is one output channel's log as a snapshot stored it.
type restoredLog struct {
	base     weak.Position
	entries  []weak.Entry
	payloads []network.Buffer
}

// readLogs decodes a task's output log file: per edge, per consumer
// subtask. codec returns edge k's codec.
func readLogs(r io.Reader, codec func(k int) (dataflow.ChannelCodec, error)) (map[[2]int]*restoredLog, error) {
	br := bufio.NewReader(r)
	tagged, err := readLogHeader(br)
	if err != nil {
		return nil, err
	}
	out := map[[2]int]*restoredLog{}
	u := func(what string) (uint64, error) {
		v, err := binary.ReadUvarint(br)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, corruptEOF(err))
		}
		return v, nil
	}
	channels := uint64(0)
	if tagged {
		if channels, err = u("channel count"); err != nil {
			return nil, err
		}
	}
	for ch := uint64(0); ; ch++ {
		_, err := br.Peek(1)
		if tagged && ch == channels {
			if err == nil {
				return nil, fmt.Errorf("bytes after the %d channels the header announced: corrupt output log", channels)
			}
			return out, nil
		}
		if errors.Is(err, io.EOF) {
			if tagged {
				return nil, fmt.Errorf("%d of the %d channels the header announced: output log truncated: %w", ch, channels, io.ErrUnexpectedEOF)
			}
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

// readLogHeader consumes the file's format header and says whether it
// had one: version 2 and later start with weakLogHeader's prefix and a
// version byte; a file without one is version 1, whose channels follow
// the same layout.
func readLogHeader(br *bufio.Reader) (bool, error) {
	pre, err := br.Peek(len(weakLogMagicPrefix))
	if err != nil || string(pre) != weakLogMagicPrefix {
		if len(pre) >= 2 && pre[0] == 0xff && pre[1] == 0x00 {
			return false, fmt.Errorf("output log header %q: cut short or not an output log file of any weir version: corrupt output log", pre)
		}
		return false, nil // version 1 (or empty: no channel)
	}
	if _, err := br.Discard(len(pre)); err != nil {
		return false, err
	}
	v, err := br.ReadByte()
	if err != nil {
		return false, fmt.Errorf("output log header: %w", corruptEOF(err))
	}
	if v != weakLogVersion {
		return false, fmt.Errorf("output log format version %d: this build reads versions 1 to %d; restore it with the weir build that wrote it or a newer one", v, weakLogVersion)
	}
	return true, nil
}

func corruptEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("output log truncated: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// writeLogs writes the logs a snapshot took as its file.
func writeLogs(ctx context.Context, sw dataflow.StateWriter, name string, snap *logSnapshot) (*checkpoint.StateFile, error) {
	f, err := sw.WriteFile(ctx, name, func(w io.Writer) error {
		_, err := snap.WriteTo(w)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write output logs: %w", err)
	}
	return &f, nil
}

// readRestoredLogs reads the output logs a subtask of v stored with the
// snapshot of rv whose positions are pos.
func readRestoredLogs(ctx context.Context, rv runtime.RestoreView, v *dataflow.Vertex, pos *checkpoint.WeakPositions, batchSize int) (map[[2]int]*restoredLog, error) {
	rc, err := rv.OpenFile(ctx, *pos.Logs)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	last := v.Chain[len(v.Chain)-1]
	return readLogs(rc, func(k int) (dataflow.ChannelCodec, error) {
		if k < 0 || k >= len(v.Outputs) {
			return nil, fmt.Errorf("output log of edge %d: vertex %q has %d output edges: the snapshot is of another job", k, v.Name(), len(v.Outputs))
		}
		o := v.Outputs[k]
		f := o.Edge.Output(last)
		c, err := f.NewChannelCodec(batchSize)
		if err != nil {
			return nil, runtime.EdgeCodecError(last, f, o.To, err)
		}
		return c, nil
	})
}

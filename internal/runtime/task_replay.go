package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/network"
)

// channelReplay is the channel state to process before the gate (restore
// of an unaligned checkpoint): parts is nil once replayed or when there is
// none; open reads their files.
type channelReplay struct {
	parts []replayPart
	open  func(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error)
}

// replayChannelState processes the channel state of the unaligned
// checkpoint the task restored from, before it polls its gate. Frames are
// read in file order, which keeps each channel's order; every batch goes
// through the chain like polled input (fault points, timers, flushing), and
// the task waits out output debt between batches. Meanwhile upstream tasks
// fill the gate and stop at their credits, so on every channel the replayed
// records come before any new one; barriers wait in the gate, and the
// checkpoint timeout covers a long replay. After a rescale the records of
// several old subtasks' files are redistributed (restore_channels.go).
func (t *Task) replayChannelState(ctx context.Context) error {
	parts := t.replay.parts
	t.replay.parts = nil
	for _, p := range parts {
		if err := t.replayPart(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// replayPart processes one channel-state file.
func (t *Task) replayPart(ctx context.Context, p replayPart) error {
	h := p.handle
	rc, err := t.replay.open(ctx, h.File)
	if err != nil {
		return fmt.Errorf("replay channel state: %w", err)
	}
	defer rc.Close()
	fr := storage.NewChannelFrameReader(rc, h)
	counts := make([]int64, len(h.Channels))
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("replay channel state %s: %w", h.File.Path, err)
		}
		hc := h.Channels[f.Index]
		ch := f.Channel
		if p.gate != nil {
			if ch = p.gate[f.Index]; ch < 0 {
				continue // another subtask's share
			}
		}
		if ch < 0 || ch >= len(t.ua.chans) {
			return fmt.Errorf("replay channel state %s: frame at offset %d names channel %d, the gate has %d: %w", h.File.Path, f.Offset, ch, len(t.ua.chans), storage.ErrCorrupt)
		}
		want := t.ua.chans[ch]
		if hc.Input != want.input || p.gate == nil && hc.Producer != want.producer {
			return fmt.Errorf("replay channel state %s: frame at offset %d on channel %d belongs to input %d producer %d, the gate has input %d producer %d there: %w", h.File.Path, f.Offset, ch, hc.Input, hc.Producer, want.input, want.producer, storage.ErrCorrupt)
		}
		data, n, err := want.codec.DecodeBatch(f.Payload)
		if err != nil {
			return fmt.Errorf("replay channel state %s: frame at offset %d: %w", h.File.Path, f.Offset, err)
		}
		if n != len(f.Payload) {
			return fmt.Errorf("replay channel state %s: frame at offset %d: %d bytes after the batch: %w", h.File.Path, f.Offset, len(f.Payload)-n, storage.ErrCorrupt)
		}
		counts[f.Index] += int64(want.codec.Records(data))
		if p.keys != nil && p.keys[f.Index] != nil {
			k := p.keys[f.Index]
			if data, _, err = want.codec.KeepKeyGroups(data, k.hash, k.maxParallelism, k.keep); err != nil {
				return fmt.Errorf("replay channel state %s: frame at offset %d: %w", h.File.Path, f.Offset, err)
			}
		}
		if err := t.awaitOutput(ctx, false); err != nil {
			return err
		}
		if err := t.handleBuffer(ctx, ch, network.Buffer{Kind: network.Data, Data: data}); err != nil {
			return err
		}
	}
	for i, c := range h.Channels {
		if p.gate != nil && p.gate[i] < 0 {
			continue
		}
		if counts[i] != c.Records {
			return fmt.Errorf("replay channel state %s: input %d producer %d held %d records, the checkpoint says %d: %w", h.File.Path, c.Input, c.Producer, counts[i], c.Records, storage.ErrCorrupt)
		}
	}
	return nil
}

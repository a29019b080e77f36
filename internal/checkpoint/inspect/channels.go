package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// channelState reports one subtask's channel-state file. It streams the
// file through storage.OpenFile (size and checksum) and the frame reader
// (the frames tile the handle's segments, one gate channel per input
// channel), so a report is only given for a file a restore could replay.
// Batches are not decoded: their codec belongs to the job.
func channelState(ctx context.Context, sfs *storage.FS, h *checkpoint.ChannelStateHandle, uid string, subtask int) (cs ChannelState, err error) {
	cs = ChannelState{Operator: uid, Subtask: subtask, File: h.File.Path, Size: h.File.Size, CRC32C: h.File.CRC32C,
		Inputs: make([]InputChannel, len(h.Channels))}
	for i, c := range h.Channels {
		in := InputChannel{Input: c.Input, ProducerUID: c.ProducerUID, Producer: c.Producer, ProducerParallelism: c.ProducerParallelism,
			GateChannel: -1, Segments: len(c.Segments), Records: c.Records}
		for _, s := range c.Segments {
			in.Bytes += s.Length
		}
		cs.Inputs[i] = in
	}
	r, err := sfs.OpenFile(ctx, h.File)
	if err != nil {
		return ChannelState{}, err
	}
	defer r.Close()
	fr := storage.NewChannelFrameReader(r, h)
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return cs, nil
		}
		if err != nil {
			return ChannelState{}, fmt.Errorf("channel state file %s: %w", h.File.Path, err)
		}
		in := &cs.Inputs[f.Index]
		in.GateChannel = f.Channel
		in.Batches++
	}
}

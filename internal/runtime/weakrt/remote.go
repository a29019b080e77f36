package weakrt

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/network/wire"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/weak"
)

// ServeLog answers the partition request of a consumer attempt on
// another TaskManager (runtime.LogServer, the data plane's
// remote.WeakHandler): it makes an OutChannel for that attempt and
// reconnects the channel's log to it, replaying what follows the position
// from that the consumer's snapshot read (zero: it starts without one).
// The log is the producer subtask's, kept here across its attempts; a
// request that comes before the producer was deployed here creates it,
// and the producer's first execution writes into it. life is the job's
// context here, which the replay runs in.
func (r *weakRegistry) ServeLog(ctx, life context.Context, key remote.PartitionKey, attempt int, from wire.LogPos) (*remote.OutChannel, error) {
	prep := r.job.Prepared
	jg := prep.Graph
	if key.Producer.Vertex < 0 || key.Producer.Vertex >= len(jg.Vertices) {
		return nil, fmt.Errorf("job %s has no vertex %d", key.Job, key.Producer.Vertex)
	}
	v := jg.Vertices[key.Producer.Vertex]
	if key.Edge < 0 || key.Edge >= len(v.Outputs) || key.Producer.Subtask >= v.Parallelism {
		return nil, fmt.Errorf("job %s: vertex %q subtask %d has no output edge %d", key.Job, v.Name(), key.Producer.Subtask, key.Edge)
	}
	o := v.Outputs[key.Edge]
	if key.Consumer < 0 || key.Consumer >= o.To.Parallelism {
		return nil, fmt.Errorf("job %s: vertex %q has no subtask %d", key.Job, o.To.Name(), key.Consumer)
	}
	last := v.Chain[len(v.Chain)-1]
	f := o.Edge.Output(last)
	codec, err := f.NewChannelCodec(prep.Config.BatchSize)
	if err != nil {
		return nil, runtime.EdgeCodecError(last, f, o.To, err)
	}
	consumer := checkpoint.TaskID{Vertex: o.To.ID, Subtask: key.Consumer}
	s, _ := r.sender(weakKey{producer: key.Producer, edge: key.Edge, consumer: key.Consumer}, consumer)
	// The log's own codec: the OutChannel encodes on the sending
	// goroutines, the log for the producer's snapshot on its task's.
	if own, err := f.NewChannelCodec(prep.Config.BatchSize); err == nil {
		s.setCodec(own)
	}
	out, err := remote.NewOutChannel(remote.OutChannelConfig{
		Key:     key,
		Attempt: attempt,
		Codec:   codec,
		Credits: prep.Config.CreditsPerChannel,
		// A completed snapshot of the consumer releases what it covers.
		// Called on the connection's reader: truncate never waits.
		OnRelease: func(p wire.LogPos) {
			if err := s.truncate(weak.Position{Buffers: p.Buffers, Records: p.Records}); err != nil {
				r.log.Warn("weak: a consumer's release does not match its producer's log", "partition", key.String(), "error", err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		out.Close()
		return nil, fmt.Errorf("consumer attempt %d went away before its replay: %w", attempt, ctx.Err())
	}
	if !s.admit(attempt) {
		out.Close()
		return nil, fmt.Errorf("consumer attempt %d of %s: a newer attempt connected already", attempt, key)
	}
	// A replay that fails (the consumer went away again) closes the
	// channel: a consumer still reading fails and restarts.
	if _, err := s.reconnect(life, out, weak.Position{Buffers: from.Buffers, Records: from.Records}, func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			out.Close()
		}
	}); err != nil {
		out.Close()
		return nil, fmt.Errorf("replay to consumer attempt %d: %w", attempt, err)
	}
	return out, nil
}

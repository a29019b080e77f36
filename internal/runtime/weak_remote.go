package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/network/wire"
	"github.com/weirstream/weir/internal/weak"
)

// weakRequest answers the partition request of a consumer attempt on
// another TaskManager in WEAKLY_CONSISTENT mode (remote.WeakHandler): it
// makes an OutChannel for that attempt and reconnects the channel's log to
// it, replaying what follows the position from that the consumer's
// snapshot read (zero: it starts without one). The log is the producer
// subtask's, kept here across its attempts; a request that comes before
// the producer was deployed here creates it, and the producer's first
// execution writes into it.
//
// It waits, within ctx, for the job to be prepared on this TaskManager:
// consumer and producer deployments race.
func (te *TaskExecutor) weakRequest(ctx context.Context, key remote.PartitionKey, attempt int, from wire.LogPos) (*remote.OutChannel, error) {
	j, err := te.preparedJob(ctx, key.Job)
	if err != nil {
		return nil, err
	}
	reg := j.weakRegistry()
	if reg == nil {
		return nil, fmt.Errorf("job %s is not in WEAKLY_CONSISTENT mode on TaskManager %s: the consumer asked for a weak channel", key.Job, te.cfg.ID)
	}
	jg := j.prep.Graph
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
	codec, err := f.NewChannelCodec(j.prep.Config.BatchSize)
	if err != nil {
		return nil, edgeCodecError(last, f, o.To, err)
	}
	consumer := checkpoint.TaskID{Vertex: o.To.ID, Subtask: key.Consumer}
	s, _ := reg.sender(weakKey{producer: key.Producer, edge: key.Edge, consumer: key.Consumer}, consumer)
	// The log's own codec: the OutChannel encodes on the sending
	// goroutines, the log for the producer's snapshot on its task's.
	if own, err := f.NewChannelCodec(j.prep.Config.BatchSize); err == nil {
		s.setCodec(own)
	}
	out, err := remote.NewOutChannel(remote.OutChannelConfig{
		Key:     key,
		Attempt: attempt,
		Codec:   codec,
		Credits: j.prep.Config.CreditsPerChannel,
		// A completed snapshot of the consumer releases what it covers.
		// Called on the connection's reader: truncate never waits.
		OnRelease: func(p wire.LogPos) {
			if err := s.truncate(weak.Position{Buffers: p.Buffers, Records: p.Records}); err != nil {
				te.log.Warn("weak: a consumer's release does not match its producer's log", "partition", key.String(), "error", err)
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
	if _, err := s.reconnect(j.ctx, out, weak.Position{Buffers: from.Buffers, Records: from.Records}, func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			out.Close()
		}
	}); err != nil {
		out.Close()
		return nil, fmt.Errorf("replay to consumer attempt %d: %w", attempt, err)
	}
	return out, nil
}

// preparedJob returns job, waiting within ctx until this TaskExecutor was
// asked to prepare it and did.
func (te *TaskExecutor) preparedJob(ctx context.Context, job string) (*teJob, error) {
	for {
		te.mu.Lock()
		j := te.jobs[job]
		if te.added == nil {
			te.added = make(chan struct{})
		}
		added := te.added
		te.mu.Unlock()
		if j != nil {
			select {
			case <-j.ready:
				if j.prepErr != nil {
					return nil, j.prepErr
				}
				return j, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("job %s not prepared on TaskManager %s: %w", job, te.cfg.ID, ctx.Err())
			}
		}
		select {
		case <-added:
		case <-ctx.Done():
			return nil, fmt.Errorf("job %s not deployed on TaskManager %s: %w", job, te.cfg.ID, ctx.Err())
		}
	}
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/hooks"
)

// legacySource writes partition offsets as the source did before they
// were union state (round-robin list state), reads nothing, and fails
// once a checkpoint completed.
type legacySource struct {
	env   *weir.Env
	elems [][]partitionOffset // by subtask
	els   []partitionOffset
	state *weir.OperatorList[partitionOffset]
}

var errLegacyDone = errors.New("legacy checkpoint taken")

func (s *legacySource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	st, err := weir.GetOperatorListState[partitionOffset](rc, offsetsState)
	s.state, s.els = st, s.elems[rc.Subtask()]
	return err
}

func (s *legacySource) Read(ctx context.Context, dst []string, _ int) ([]string, error) {
	if hooks.Plan(s.env).Status.CompletedCheckpoints.Load() >= 1 {
		return dst, errLegacyDone
	}
	return dst, nil
}

func (s *legacySource) SnapshotState(int64) error   { s.state.Update(s.els); return nil }
func (s *legacySource) Close(context.Context) error { return nil }

// TestSourceRestoresLegacyCheckpoint restores, at parallelism 3, a
// checkpoint of parallelism 2 in the older round-robin format: each
// partition is read once from its offset. The run's own checkpoints are
// in the union format, which a restore at parallelism 1 then reads.
func TestSourceRestoresLegacyCheckpoint(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 3)
	b.produceTo(t, topic, []int32{0, 1, 2}, 0, 50)
	var want []string
	for p, from := range []int{10, 15, 20} {
		for i := from; i < 50; i++ {
			want = append(want, fmt.Sprintf("%d-%d", p, i))
		}
	}
	j := newJob(t, 2)
	j.restartNone = true
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, func() weir.Source[string] {
			return &legacySource{env: env, elems: [][]partitionOffset{{{0, 10}, {2, 20}}, {{1, 15}}}}
		}).UID("kafka")
		weir.SinkTo(s, func() weir.Sink[string] { return discard[string]{} })
	})
	if !errors.Is(res.err, errLegacyDone) {
		t.Fatalf("legacy run = %v, want it stopped after a checkpoint", res.err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, p := range []int{3, 1} {
		j.parallelism = p
		var n atomic.Int64
		// The run at parallelism 3 reads unbounded and is cancelled once
		// it read some records and a checkpoint completed, so that its
		// checkpoints stay for the next run (a FINISHED job's are
		// discarded); the run at parallelism 1 reads to the end.
		opts := []Option{WithBounded()}
		ctx, cancel := context.WithCancel(context.Background())
		j.ctx = ctx
		if p == 3 {
			opts = nil
		}
		res = j.run(t, func(env *weir.Env) {
			de := func(r *kgo.Record) (string, error) {
				n.Add(1)
				return string(r.Value), nil
			}
			if p == 3 {
				go func() {
					for ctx.Err() == nil && (n.Load() <= 20 || hooks.Plan(env).Status.CompletedCheckpoints.Load() < 1) {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
			}
			s := weir.FromSource(env, Source(b.addrs, topic, de, opts...)).UID("kafka")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		})
		cancel()
		if !strings.Contains(res.log.String(), "msg=restoring") {
			t.Fatalf("parallelism %d did not restore a checkpoint", p)
		}
		if p == 3 && !errors.Is(res.err, context.Canceled) || p == 1 && res.err != nil {
			t.Fatalf("run at parallelism %d: %v\nlog:\n%s", p, res.err, res.log)
		}
	}
	j.ctx = nil
	if got := readFiles(t, out); !slices.Equal(got, sorted(want)) {
		t.Fatalf("read %d records, want the %d after the checkpoint's offsets (%s)", len(got), len(want), firstDiff(sorted(want), got))
	}
}

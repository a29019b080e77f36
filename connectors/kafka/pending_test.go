package kafka

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestSourcePublishesPendingRecords: while a slow pipeline reads a topic
// of 3,000 records, the source publishes how many it has not read yet
// (weir.PendingRecordsGauge, the autoscaler's lag) in its task's gauges:
// more than none while it is behind, never more than the topic holds
// beyond what it emitted (give or take the batch it emits after a poll:
// the figure is taken at each poll).
func TestSourcePublishesPendingRecords(t *testing.T) {
	const n = 3000
	const batch = 1024 // pipeline.batch-size: the most one Read emits
	b := newBroker(t)
	topic := b.topic(t, 2)
	cl := b.client(t, kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i % 2)}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var maxPending, violations atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	j := newJob(t, 1)
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(b.addrs, topic, func(r *kgo.Record) (string, error) { return string(r.Value), nil }, WithBounded())).UID("kafka")
		slow := weir.Map(s, func(v string) string { time.Sleep(200 * time.Microsecond); return v })
		weir.SinkTo(slow, func() weir.Sink[string] { return discard[string]{} })
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				for _, ts := range hooks.Plan(env).Status.Tasks() {
					if !strings.Contains(ts.Name, "kafka") && ts.Vertex != 0 {
						continue
					}
					p, ok := jobstatus.Sum(ts.Gauges, weir.PendingRecordsGauge)
					if !ok {
						continue
					}
					if p > float64(n-ts.RecordsOut+batch) {
						violations.Add(1)
					}
					for cur := maxPending.Load(); int64(p) > cur && !maxPending.CompareAndSwap(cur, int64(p)); cur = maxPending.Load() {
					}
				}
			}
		}()
	})
	close(stop)
	<-sampled
	if res.err != nil {
		t.Fatalf("job: %v", res.err)
	}
	if m := maxPending.Load(); m <= 0 || m > n {
		t.Errorf("largest pending records published: %d, want within (0, %d] while the slow pipeline is behind", m, n)
	}
	if v := violations.Load(); v > 0 {
		t.Errorf("%d samples published more pending records than the topic holds beyond what the source emitted", v)
	}
	t.Logf("largest pending records published: %d of %d", maxPending.Load(), n)
}

package runtime

import (
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/autoscaler"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestAutoscaleSourceLag: a source's published pending records reach the
// rule as its lag. A pipeline reading 1,000 records/s, every vertex busy
// half its time, is within the utilization band and stays; with 600,000
// records pending at the source, catching them up within the 5-minute
// catch-up time needs 3,000 records/s, which a subtask doing 2,000
// cannot: the source scales to 3 and the keyed vertex to 4 (3 aligned to
// a divisor of its 128 key groups). A source whose subtasks do
// not all publish the gauge has an unknown lag (-1).
func TestAutoscaleSourceLag(t *testing.T) {
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 1), dataflowtest.Node("agg", 1, dataflowtest.Hash(0))), 128)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(publish bool) (jobstatus.AutoscalerDecision, bool) {
		t.Helper()
		now := time.Unix(1_000_000, 0)
		st := &jobstatus.JobStatus{}
		rec := jobstatus.RecorderOf(st)
		rec.SetState(jobstatus.StateRunning, now)
		var n int64
		half := jobstatus.TaskTime{BusyMsPerSecond: 500, IdleMsPerSecond: 500}
		rec.SetTaskSource(func() []jobstatus.TaskStats {
			src := jobstatus.TaskStats{Vertex: 0, RecordsOut: n, Time: half}
			if publish {
				// Per split, as the NATS source publishes it.
				src.Gauges = []jobstatus.Gauge{
					{Name: jobstatus.PendingRecordsGauge, Labels: []jobstatus.Label{{Key: "split", Value: "a"}}, Value: 400_000},
					{Name: jobstatus.PendingRecordsGauge, Labels: []jobstatus.Label{{Key: "split", Value: "b"}}, Value: 200_000},
				}
			}
			return []jobstatus.TaskStats{src, {Vertex: 1, RecordsIn: n, RecordsOut: n, Time: half}}
		})
		cfg := AutoscalerConfig{Enabled: true, Interval: 10 * time.Second, Rule: autoscaler.DefaultConfig()}
		cfg.Rule.Stabilization, cfg.Rule.MetricsWindow = 0, time.Minute
		d, err := newAutoscaleDriver(cfg, st, nil, slog.New(slog.DiscardHandler), func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		if err := d.attach(jg); err != nil {
			t.Fatal(err)
		}
		var last jobstatus.AutoscalerDecision
		for range 12 {
			now = now.Add(10 * time.Second)
			n += 10_000
			r, dec, ok := d.tick()
			if !ok {
				continue
			}
			last = dec
			if r != nil {
				return dec, true
			}
		}
		return last, false
	}
	dec, rescaled := decide(true)
	if !rescaled || len(dec.Vertices) != 2 || dec.Vertices[0].Lag != 600_000 || dec.Vertices[0].To != 3 || dec.Vertices[1].To != 4 {
		t.Errorf("with 600,000 pending: rescaled %v, %+v; want the source's lag 600000, src to 3 and agg to 4", rescaled, dec)
	}
	dec, rescaled = decide(false)
	if rescaled || len(dec.Vertices) != 2 || dec.Vertices[0].Lag != -1 || dec.Vertices[1].To != 1 {
		t.Errorf("without the gauge: rescaled %v, %+v; want lag -1 and no change", rescaled, dec)
	}
}

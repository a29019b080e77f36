package cluster

import (
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/jobstatus"
)

// gaugesToPB carries a task's published gauges in its heartbeat report,
// so that the JobManager's /metrics exports them.
func gaugesToPB(gs []jobstatus.Gauge) []*pb.Gauge {
	if len(gs) == 0 {
		return nil
	}
	out := make([]*pb.Gauge, 0, len(gs))
	for _, g := range gs {
		labels := make([]string, 0, 2*len(g.Labels))
		for _, l := range g.Labels {
			labels = append(labels, l.Key, l.Value)
		}
		out = append(out, &pb.Gauge{Name: g.Name, Labels: labels, Value: g.Value})
	}
	return out
}

// gaugesFromPB reads the gauges of a heartbeat report.
func gaugesFromPB(gs []*pb.Gauge) []jobstatus.Gauge {
	if len(gs) == 0 {
		return nil
	}
	out := make([]jobstatus.Gauge, 0, len(gs))
	for _, g := range gs {
		var labels []jobstatus.Label
		for i := 0; i+1 < len(g.GetLabels()); i += 2 {
			labels = append(labels, jobstatus.Label{Key: g.GetLabels()[i], Value: g.GetLabels()[i+1]})
		}
		out = append(out, jobstatus.Gauge{Name: g.GetName(), Labels: labels, Value: g.GetValue()})
	}
	return out
}

package jobstatus

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Gauge is a value an operator publishes beside its task's metrics: a
// connector's figure such as a change data capture source's replication
// lag (Flink's user-defined gauges). Name is a Prometheus metric name;
// Labels, sorted by key, tell gauges of one name apart.
type Gauge struct {
	Name   string  `json:"name"`
	Labels []Label `json:"labels,omitempty"`
	Value  float64 `json:"value"`
}

// Label is one label of a Gauge.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Gauges are one task's gauges. Operators set them, from the task's
// goroutine or their own; heartbeats and scrapes read them. The zero
// value is ready.
type Gauges struct {
	mu sync.Mutex
	m  map[string]*Gauge // by name and labels
}

// Set sets the gauge name with the given labels (key, value pairs; an odd
// last key is dropped) to v.
func (g *Gauges) Set(name string, v float64, labels ...string) {
	ls := make([]Label, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, Label{Key: labels[i], Value: labels[i+1]})
	}
	slices.SortFunc(ls, func(a, b Label) int { return cmp.Compare(a.Key, b.Key) })
	var key strings.Builder
	key.WriteString(name)
	for _, l := range ls {
		key.WriteString("\x00" + l.Key + "\x00" + l.Value)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*Gauge{}
	}
	if cur, ok := g.m[key.String()]; ok {
		cur.Value = v
		return
	}
	g.m[key.String()] = &Gauge{Name: name, Labels: ls, Value: v}
}

// Snapshot returns the gauges set so far, sorted by name and labels; nil
// without any.
func (g *Gauges) Snapshot() []Gauge {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(g.m))
	for k := range g.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Gauge, 0, len(keys))
	for _, k := range keys {
		out = append(out, *g.m[k])
	}
	return out
}

// PendingRecordsGauge is the gauge a source publishes for the records it
// has not read yet (Flink's pendingRecords, FLIP-33): a Kafka source's
// distance from the end of its partitions, a NATS source's from the end
// of its stream. A subtask may publish it once or per split (told apart
// by labels); its pending records are the sum. The autoscaler reads it as
// the source's lag, which it plans to catch up.
const PendingRecordsGauge = "weir_source_pending_records"

// Sum returns the sum of the values of the gauges named name in gs and
// whether there was one.
func Sum(gs []Gauge, name string) (float64, bool) {
	var sum float64
	found := false
	for _, g := range gs {
		if g.Name == name {
			sum += g.Value
			found = true
		}
	}
	return sum, found
}

package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// HelpOperatorGauge is the help of the gauges operators publish
// (jobstatus.Gauge): their meaning is the connector's to document.
const HelpOperatorGauge = "A value an operator of the task published (a connector's figure; see its documentation)."

// operatorGauges exports the gauges the job's operators published
// (jobstatus.TaskStats.Gauges) under their own names, with the job's and
// the task's labels added to theirs, so that a connector's series (a CDC
// source's replication lag) reach the JobManager's /metrics in a cluster,
// where the TaskManagers' heartbeats carry them. Its metrics are known
// only at a scrape, so it is an unchecked collector (Describe sends
// nothing). A registry cannot unregister such a collector (it knows it by
// its descriptors), so Job.Unregister switches it off instead: what stays
// registered is this empty shell, which no longer holds the job.
type operatorGauges struct {
	j atomic.Pointer[Job] // nil once unregistered
}

func (*operatorGauges) Describe(chan<- *prometheus.Desc) {}

func (c *operatorGauges) Collect(ch chan<- prometheus.Metric) {
	j := c.j.Load()
	if j == nil {
		return
	}
	descs := map[string]*prometheus.Desc{}
	for _, t := range j.status.Tasks() {
		for _, g := range t.Gauges {
			names := append([]string{}, taskLabels...)
			values := []string{strconv.Itoa(t.Vertex), t.Name, strconv.Itoa(t.Subtask)}
			key := g.Name
			for _, l := range g.Labels {
				names = append(names, l.Key)
				values = append(values, l.Value)
				key += "\x00" + l.Key
			}
			d := descs[key]
			if d == nil {
				d = prometheus.NewDesc(g.Name, HelpOperatorGauge, names, j.labels)
				descs[key] = d
			}
			m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, g.Value, values...)
			if err != nil {
				// A bad name or a label that clashes with the task's: the
				// scrape reports it rather than dropping it.
				m = prometheus.NewInvalidMetric(d, err)
			}
			ch <- m
		}
	}
}

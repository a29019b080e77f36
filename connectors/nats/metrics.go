package nats

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// sourceMetrics are a source subtask's gauges; the vectors are shared by
// every subtask registered in one registry.
type sourceMetrics struct {
	lag     *prometheus.GaugeVec
	skipped *prometheus.CounterVec
}

// newSourceMetrics registers the source's metrics in reg, or takes the
// ones another subtask registered there. A nil reg gives metrics that
// are kept but not exported.
func newSourceMetrics(reg prometheus.Registerer) (sourceMetrics, error) {
	m := sourceMetrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "weir_nats_source_consumer_lag",
			Help: "Messages of a NATS source split stored in the stream after the source's position (the consumer's pending count).",
		}, []string{"stream", "split", "operator", "subtask"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weir_nats_source_skipped_records_total",
			Help: "Messages a NATS source skipped because its deserializer rejected them (nats.WithSkipBadRecords).",
		}, []string{"stream", "operator", "subtask"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.lag, err = badrecords.Register(reg, m.lag); err != nil {
		return m, err
	}
	m.skipped, err = badrecords.Register(reg, m.skipped)
	return m, err
}

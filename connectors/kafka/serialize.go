package kafka

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// WithSkipSerializeErrors makes a sink skip values its serializer rejects:
// each is logged at WARN level (sink, topic, index in its batch, error)
// and counted, with WithMetrics in weir_kafka_sink_skipped_records_total.
// Without it a serializer error fails the job for good, naming the sink,
// the topic and the value's index in its batch.
func WithSkipSerializeErrors() Option { return Option{func(o *options) { o.skipSerialize = true }} }

// newSerializeErrors makes a sink subtask's handler of serializer errors.
func newSerializeErrors(o options, uid, topic string, subtask int, log *slog.Logger) (*badrecords.Serialize, error) {
	skipped, err := badrecords.Register(o.metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_kafka_sink_skipped_records_total",
		Help: "Values a Kafka sink skipped because its serializer rejected them (kafka.WithSkipSerializeErrors).",
	}, []string{"topic", "operator", "subtask"}))
	if err != nil {
		return nil, fmt.Errorf("kafka sink %q: register metrics: %w", uid, err)
	}
	return &badrecords.Serialize{
		Sink:       fmt.Sprintf("kafka sink %q", uid),
		Target:     fmt.Sprintf("topic %q", topic),
		Skip:       o.skipSerialize,
		SkipOption: "kafka.WithSkipSerializeErrors",
		Log:        log,
		Skipped:    skipped.WithLabelValues(topic, uid, strconv.Itoa(subtask)),
	}, nil
}

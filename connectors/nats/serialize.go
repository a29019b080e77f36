package nats

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// WithSkipSerializeErrors makes a sink skip values its serializer rejects:
// each is logged at WARN level (sink, stream, index in its batch, error)
// and counted, with WithMetrics in weir_nats_sink_skipped_records_total.
// Without it a serializer error fails the job for good, naming the sink,
// the stream and the value's index in its batch.
func WithSkipSerializeErrors() Option { return Option{func(o *options) { o.skipSerialize = true }} }

// newSerializeErrors makes a sink subtask's handler of serializer errors.
func newSerializeErrors(o options, uid, stream string, subtask int, log *slog.Logger) (*badrecords.Serialize, error) {
	skipped, err := badrecords.Register(o.metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_nats_sink_skipped_records_total",
		Help: "Values a NATS sink skipped because its serializer rejected them (nats.WithSkipSerializeErrors).",
	}, []string{"stream", "operator", "subtask"}))
	if err != nil {
		return nil, fmt.Errorf("nats sink %q: register metrics: %w", uid, err)
	}
	return &badrecords.Serialize{
		Sink:       fmt.Sprintf("nats sink %q", uid),
		Target:     fmt.Sprintf("stream %q", stream),
		Skip:       o.skipSerialize,
		SkipOption: "nats.WithSkipSerializeErrors",
		Log:        log,
		Skipped:    skipped.WithLabelValues(stream, uid, strconv.Itoa(subtask)),
	}, nil
}

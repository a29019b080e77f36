package nats

import (
	"log/slog"

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
	return badrecords.NewSerialize(o.metrics, badrecords.Sink{Connector: "nats", TargetKind: "stream", Target: stream, UID: uid, Subtask: subtask}, o.skipSerialize, log)
}

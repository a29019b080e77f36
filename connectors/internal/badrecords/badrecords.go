// Package badrecords is what the connectors share about records their
// (de)serializers reject: a sink's serializer failures fail the job
// naming the sink, where it writes and the record's index in its batch,
// or are skipped, logged and counted when the user asks for that; never
// dropped silently. It also registers the counters of such records.
package badrecords

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
)

// Register registers c in reg, or returns the equal collector another
// subtask (or an earlier attempt) registered there. A nil reg registers
// nothing.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if prev, ok := are.ExistingCollector.(C); ok {
				return prev, nil
			}
		}
		return c, err
	}
	return c, nil
}

// Serialize decides what a sink does with a value its serializer
// rejected. The zero value fails the job; it is used from the sink's task
// goroutine only.
type Serialize struct {
	// Sink names the sink in messages: `kafka sink "uid"`.
	Sink string
	// Target says where the sink writes: `topic "t"`, `stream "S"`.
	Target string
	// Skip skips rejected values (logged at WARN, counted) instead of
	// failing the job; SkipOption names the option that sets it, for the
	// failure's message.
	Skip       bool
	SkipOption string
	Log        *slog.Logger       // nil: slog.Default()
	Skipped    prometheus.Counter // nil: not exported

	skipped int64
}

// Failed handles err, the serializer's error for the value at index i of
// a batch of n: nil when the value is to be skipped, otherwise an error
// that fails the job for good (a restart would serialize the same value
// again).
func (s *Serialize) Failed(i, n int, err error) error {
	if !s.Skip {
		return weir.Unrecoverable(fmt.Errorf("%s: serialize record %d of a batch of %d for %s: %w (pass %s to skip and count such records)", s.Sink, i, n, s.Target, err, s.SkipOption))
	}
	s.skipped++
	if s.Skipped != nil {
		s.Skipped.Inc()
	}
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn(s.Sink+": skipped a record the serializer rejected", "target", s.Target, "index", i, "batch", n, "err", err, "skipped", s.skipped)
	return nil
}

// Count is how many values were skipped.
func (s *Serialize) Count() int64 { return s.skipped }

// Sink names a sink subtask for NewSerialize.
type Sink struct {
	// Connector is the connector's package ("kafka"), in messages, the
	// option's name and the metric's.
	Connector string
	// TargetKind ("topic", "stream") and Target name where it writes; the
	// kind is the metric's label for the target.
	TargetKind, Target string
	UID                string
	Subtask            int
}

// NewSerialize makes a sink subtask's handler of serializer errors:
// skip says whether the user asked to skip them (the connector's
// WithSkipSerializeErrors), and the skipped values are counted in
// weir_<connector>_sink_skipped_records_total{<kind>,operator,subtask}
// on reg (nil: not exported).
func NewSerialize(reg prometheus.Registerer, sink Sink, skip bool, log *slog.Logger) (*Serialize, error) {
	name := fmt.Sprintf("%s sink %q", sink.Connector, sink.UID)
	option := sink.Connector + ".WithSkipSerializeErrors"
	skipped, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_" + sink.Connector + "_sink_skipped_records_total",
		Help: "Values a sink skipped because its serializer rejected them (" + option + ").",
	}, []string{sink.TargetKind, "operator", "subtask"}))
	if err != nil {
		return nil, fmt.Errorf("%s: register metrics: %w", name, err)
	}
	return &Serialize{
		Sink:       name,
		Target:     fmt.Sprintf("%s %q", sink.TargetKind, sink.Target),
		Skip:       skip,
		SkipOption: option,
		Log:        log,
		Skipped:    skipped.WithLabelValues(sink.Target, sink.UID, strconv.Itoa(sink.Subtask)),
	}, nil
}

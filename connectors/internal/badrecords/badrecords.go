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

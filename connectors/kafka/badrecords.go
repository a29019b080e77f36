package kafka

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/internal/badrecords"
)

// WithBadRecordsTo sends records the deserializer rejects to the source's
// side output tag, as weir.BadRecord values (bytes, topic, partition,
// offset, error text), instead of failing the job. Read them with
// weir.SideOutput(stream, tag) and sink or process them. They are exactly
// once like the main output: a bad record goes out in the same step as
// the offset that passes it, so a restore never emits it again. The
// source refuses to open when the job does not read tag.
func WithBadRecordsTo(tag weir.OutputTag[weir.BadRecord]) Option {
	return Option{func(o *options) { o.badTo = &tag }}
}

// WithSkipBadRecords skips records the deserializer rejects: each is
// logged at WARN level (topic, partition, offset, error) and counted in
// the source's SkippedRecords and, with WithMetrics, in
// weir_kafka_source_skipped_records_total. Without it (and without
// WithDeserializeErrorHandler or WithBadRecordsTo) a bad record fails the
// job.
func WithSkipBadRecords() Option { return Option{func(o *options) { o.skipBad = true }} }

// WithMetrics registers the connector's metrics (the records a source or
// sink skipped) in reg. Without it nothing is registered.
func WithMetrics(reg prometheus.Registerer) Option {
	return Option{func(o *options) { o.metrics = reg }}
}

// openBadRecords checks the bad-record options when the source opens.
func (s *source[T]) openBadRecords(rc *weir.RuntimeContext) error {
	s.rc = rc
	if s.o.badTo != nil && !weir.SideOutputConnected(rc, *s.o.badTo) {
		return weir.Unrecoverable(fmt.Errorf("kafka source %q: bad records go to side output %q, which the job does not read: read it with weir.SideOutput(stream, tag) and sink it", s.uid, s.o.badTo.ID()))
	}
	skipped, err := badrecords.Register(s.o.metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_kafka_source_skipped_records_total",
		Help: "Records a Kafka source skipped because its deserializer rejected them (kafka.WithSkipBadRecords).",
	}, []string{"topic", "operator", "subtask"}))
	if err != nil {
		return fmt.Errorf("kafka source %q: register metrics: %w", s.uid, err)
	}
	s.skippedTotal = skipped.WithLabelValues(s.topic, s.uid, strconv.Itoa(s.subtask))
	return nil
}

// badRecord handles a record the deserializer rejected with err: a
// handler, the side output, skip-and-count, or a failure for good, in
// that order of the options given.
func (s *source[T]) badRecord(r *kgo.Record, err error) error {
	switch {
	case s.o.onBad != nil:
		if herr := s.o.onBad(r, err); herr != nil {
			return fmt.Errorf("kafka source %q: record at topic %q partition %d offset %d: %w", s.uid, s.topic, r.Partition, r.Offset, herr)
		}
	case s.o.badTo != nil:
		weir.CollectSourceSide(s.rc, *s.o.badTo, weir.BadRecord{
			Source: s.uid, Subtask: s.subtask,
			Topic: s.topic, Partition: r.Partition, Offset: r.Offset,
			Key: cloneBytes(r.Key), Value: cloneBytes(r.Value), Time: r.Timestamp,
			Err: err.Error(),
		})
	case s.o.skipBad:
		s.skipped++
		s.skippedTotal.Inc()
		s.log.Warn("kafka source: skipped a record the deserializer rejected", "source", s.uid, "topic", s.topic, "partition", r.Partition, "offset", r.Offset, "err", err, "skipped", s.skipped)
	default:
		// A restart would meet the same record: fail for good.
		return weir.Unrecoverable(fmt.Errorf("kafka source %q: deserialize topic %q partition %d offset %d: %w (pass kafka.WithBadRecordsTo to route bad records to a side output, kafka.WithSkipBadRecords to skip and count them, or kafka.WithDeserializeErrorHandler to handle them)", s.uid, s.topic, r.Partition, r.Offset, err))
	}
	return nil
}

// SkippedRecords counts the records this subtask skipped
// (WithSkipBadRecords) since it opened.
func (s *source[T]) SkippedRecords() int64 { return s.skipped }

// cloneBytes copies b, which the client may reuse; nil stays nil.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Package formats turns records into bytes and back for the connectors:
// JSON for any Go type with encoding/json struct tags, and Protobuf for
// generated message types. A Format is what a connector's (de)serializer
// calls:
//
//	events := formats.JSON[Event]()
//	src := kafka.Source(brokers, "events", func(r *kgo.Record) (Event, error) {
//		return events.Decode(r.Value)
//	})
//	sink := kafka.ExactlyOnce(brokers, "totals", func(t Total, r *kgo.Record) (err error) {
//		r.Value, err = totals.Encode(t)
//		return err
//	})
//
// A record that does not decode is an error naming the type, the byte
// offset where decoding stopped and the start of the input; the connector
// adds where the record came from (topic, partition and offset; stream
// and sequence) and either fails the job or, when asked to, skips and
// counts it or sends it to a side output — never silently. A value that
// does not encode is the sink serializer's error: the sink fails the job
// naming itself, the topic or stream and the value's index in its batch,
// or skips and counts it when asked to.
//
// JSON uses github.com/goccy/go-json: it reads and writes what
// encoding/json does for the same tags (tested here against encoding/json
// itself), without generated code, and in pure Go on every platform, at
// about 4x the decoding and 2x the encoding speed of encoding/json
// (BENCHMARKS.md, "Formats").
package formats

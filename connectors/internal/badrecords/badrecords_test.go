package badrecords

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir/internal/runtime"
)

func TestSerializeFailsOrSkips(t *testing.T) {
	errBad := errors.New("bad value")
	sink := Sink{Connector: "kafka", TargetKind: "topic", Target: "out", UID: "snk", Subtask: 1}
	fail, err := NewSerialize(nil, sink, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = fail.Failed(3, 10, errBad)
	if !errors.Is(err, errBad) || !runtime.IsUnrecoverable(err) ||
		err.Error() != `kafka sink "snk": serialize record 3 of a batch of 10 for topic "out": bad value (pass kafka.WithSkipSerializeErrors to skip and count such records)` {
		t.Fatalf("Failed = %v, want an unrecoverable error naming sink, topic, index and option", err)
	}
	reg := prometheus.NewRegistry()
	var log bytes.Buffer
	skip, err := NewSerialize(reg, sink, true, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// A second subtask registers the same counter vector.
	if _, err := NewSerialize(reg, Sink{Connector: "kafka", TargetKind: "topic", Target: "out", UID: "snk", Subtask: 2}, true, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := skip.Failed(i, 10, errBad); err != nil {
			t.Fatalf("Failed with Skip = %v, want nil", err)
		}
	}
	if skip.Count() != 2 || !strings.Contains(log.String(), "index=1") || !strings.Contains(log.String(), `target="topic \"out\""`) {
		t.Errorf("count %d, log %s", skip.Count(), log.String())
	}
	fams, err := reg.Gather()
	if err != nil || len(fams) != 1 || fams[0].GetName() != "weir_kafka_sink_skipped_records_total" || fams[0].GetMetric()[0].GetCounter().GetValue() != 2 {
		t.Fatalf("metrics %v (%v), want weir_kafka_sink_skipped_records_total 2", fams, err)
	}
}

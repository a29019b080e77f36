package ordercheck_test

import (
	"testing"

	"github.com/weirstream/weir/internal/hooks"
)

// inFlightBound is the most records the job can hold between its sources
// and its sinks when credits work: per exchange (two), every channel's
// credited batches plus the writer's open batch, plus the batch each
// consumer subtask is processing; and a batch per source subtask.
func inFlightBound(p, batch, credits int) int64 {
	return int64((2*p*p*(credits+1) + 2*p + p) * batch)
}

// TestBackpressureBoundsMemoryAndCheckpointsComplete produces far more data
// than the heap bound through a sink that takes a fraction of what the
// sources could produce. Memory stays bounded only if the slow sink's
// backpressure reaches the sources: the records between the sources and
// the sinks never exceed what the credits allow, and the heap stays far
// below the data produced. Aligned checkpoints queue behind that data and
// must still complete, many times, with exact output.
func TestBackpressureBoundsMemoryAndCheckpointsComplete(t *testing.T) {
	const (
		p       = 2
		records = 40_000
		payload = 16 << 10
	)
	r := newRun(t, p, records)
	r.opts.Payload = payload
	r.opts.SinkRate = 20_000
	res := r.execute(t)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	st := hooks.Plan(res.env).Status
	produced := st.SourceRecords.Load() * payload
	t.Logf("%d MiB of payload produced in %v; heap in use peaked at %d MiB; at most %d records in flight (credit bound %d); sources backpressured in %d of %d samples",
		produced>>20, res.elapsed, res.samples.heapPeak>>20, res.samples.lagPeak, inFlightBound(p, r.batch, r.credits),
		res.samples.sourceBackPressured, res.samples.sourceLooks)
	t.Logf("%d checkpoints completed, %d seen in progress while sources were backpressured; durations %s",
		st.CompletedCheckpoints.Load(), res.samples.completedUnderPressure(), durationSummary(res.samples.completedDurations()))

	tot := res.report.Total()
	if tot.Committed != p*records || tot.OutOfOrder != 0 || tot.Duplicates != 0 || tot.Missing != 0 || tot.Flagged != 0 || res.report.Foreign != 0 {
		t.Errorf("output not exact: %v", res.report)
	}
	if n := r.opts.Store.Corrupt(); n != 0 {
		t.Errorf("%d records reached the sink with another record's payload", n)
	}
	if produced < 4*heapBound {
		t.Fatalf("only %d MiB produced: the test must produce at least 4x the heap bound (%d MiB) to prove anything", produced>>20, 4*heapBound>>20)
	}
	if res.samples.heapPeak >= heapBound {
		t.Errorf("heap in use peaked at %d MiB, want below %d MiB", res.samples.heapPeak>>20, heapBound>>20)
	}
	if b := inFlightBound(p, r.batch, r.credits); res.samples.lagPeak > b {
		t.Errorf("%d records were between the sources and the sinks at once, want at most %d (what the credits allow)", res.samples.lagPeak, b)
	}
	// A sanity check that the sink is the bottleneck (about 80% on an idle
	// machine); loose, as a loaded machine slows the sources too.
	if 4*res.samples.sourceBackPressured < res.samples.sourceLooks {
		t.Errorf("sources were backpressured in only %d of %d samples: the sink is not the bottleneck", res.samples.sourceBackPressured, res.samples.sourceLooks)
	}
	if n := res.samples.completedUnderPressure(); n < 10 {
		t.Errorf("%d checkpoints completed while the sources were backpressured, want at least 10", n)
	}
}

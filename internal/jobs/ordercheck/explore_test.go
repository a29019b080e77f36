package ordercheck_test

import "testing"

func TestExplore(t *testing.T) {
	for p := 1; p <= 3; p++ {
		r := newRun(t, p, 20_000)
		res := r.execute(t)
		t.Logf("p=%d err=%v elapsed=%v samples=%d heap=%dMiB lag=%d bp=%d/%d ckpts=%s completed=%d\n%s", p, res.err, res.elapsed, res.samples.n,
			res.samples.heapPeak>>20, res.samples.lagPeak, res.samples.sourceBackPressured, res.samples.sourceLooks,
			durationSummary(res.samples.completedDurations()), res.env.Status().CompletedCheckpoints.Load(), res.report)
	}
}

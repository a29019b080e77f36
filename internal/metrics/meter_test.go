package metrics

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		sec      float64
		n        int64
		attempt  int64
		wantRate float64
		wantOK   bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first reading has no rate", []step{{0, 500, 0, 0, false}}},
		{"steady", []step{{0, 0, 0, 0, false}, {10, 1000, 0, 100, true}, {20, 3000, 0, 150, true}}},
		// Readings older than the 60 s window stop counting: at 100 s the
		// window starts at the reading of 40 s.
		{"window slides", []step{{0, 0, 0, 0, false}, {40, 4000, 0, 100, true}, {70, 10000, 0, 10000.0 / 70, true}, {100, 16000, 0, 200, true}}},
		{"restart starts over", []step{{0, 0, 0, 0, false}, {10, 1000, 0, 100, true}, {20, 200, 1, 0, false}, {30, 1200, 1, 100, true}}},
		{"counter reset starts over", []step{{0, 0, 0, 0, false}, {10, 1000, 0, 100, true}, {20, 300, 0, 0, false}, {25, 800, 0, 100, true}}},
		{"same instant", []step{{5, 10, 0, 0, false}, {5, 20, 0, 0, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meter{window: time.Minute}
			for i, s := range tc.steps {
				r, ok := m.observe(at(s.sec), s.n, s.attempt)
				if ok != s.wantOK || r != s.wantRate {
					t.Fatalf("step %d (%+v): rate %v ok %v, want %v %v", i, s, r, ok, s.wantRate, s.wantOK)
				}
			}
		})
	}
}

// Frequent readings keep the meter small: at most one per window/16.
func TestMeterBounded(t *testing.T) {
	m := meter{window: time.Minute}
	t0 := time.Unix(0, 0)
	for i := range 100_000 {
		m.observe(t0.Add(time.Duration(i)*10*time.Millisecond), int64(i), 0)
	}
	if len(m.samples) > 18 {
		t.Fatalf("%d readings kept, want at most 18", len(m.samples))
	}
	r, ok := m.observe(t0.Add(1000*time.Second), 100_000, 0)
	if !ok || r < 99 || r > 101 {
		t.Fatalf("rate %v %v, want about 100/s", r, ok)
	}
}

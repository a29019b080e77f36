package ordercheck

import (
	"reflect"
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	p := pacer{rate: 1000, now: func() time.Time { return now }, sleep: func(d time.Duration) {
		slept = append(slept, d)
		now = now.Add(d)
	}}
	p.wait(10)                          // 10 ms due
	now = now.Add(4 * time.Millisecond) // the sink's own work: behind schedule
	p.wait(10)                          // restarts from now: 10 ms more
	p.wait(5)                           // on schedule: 5 ms
	now = now.Add(time.Second)          // idle
	p.wait(5)                           // no burst to catch up: 5 ms
	want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	if !reflect.DeepEqual(slept, want) {
		t.Errorf("slept %v, want %v", slept, want)
	}
}

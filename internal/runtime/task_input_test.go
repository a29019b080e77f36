package runtime

import "testing"

// TestInputEndArrived: the input ends with the last channel's EndOfData,
// whatever the order, and a channel ending twice is an error.
func TestInputEndArrived(t *testing.T) {
	e := inputEnd{ended: make([]bool, 3)}
	for i, ch := range []int{2, 0} {
		if last, err := e.arrived(ch); err != nil || last {
			t.Fatalf("EndOfData %d on channel %d: last %v, err %v; want neither", i, ch, last, err)
		}
	}
	if _, err := e.arrived(2); err == nil {
		t.Fatal("channel 2 ended twice without an error")
	}
	if last, err := e.arrived(1); err != nil || !last {
		t.Fatalf("EndOfData on the last channel: last %v, err %v; want last", last, err)
	}
}

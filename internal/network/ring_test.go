package network

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// The ring is checked against a plain slice on random operations.
func TestRingMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	r := newRing[int](3)
	var model []int
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5:
			r.push(step)
			model = append(model, step)
		case op < 9 && len(model) > 0:
			if got, want := r.pop(), model[0]; got != want {
				t.Fatalf("step %d: pop %d, want %d", step, got, want)
			}
			model = model[1:]
		case len(model) > 0:
			v := model[rng.IntN(len(model))]
			if !r.removeFirst(func(e int) bool { return e == v }) {
				t.Fatalf("step %d: %d not found", step, v)
			}
			model = slices.DeleteFunc(model, func(e int) bool { return e == v })
		}
		if r.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, r.len(), len(model))
		}
	}
	for i, want := range model {
		if got := r.at(i); got != want {
			t.Fatalf("at(%d) = %d, want %d", i, got, want)
		}
	}
}

func TestManyEventsGrowTheQueueInOrder(t *testing.T) {
	p := NewPool[int](1)
	g := NewGate(1, 1)
	c := g.Channel(0)
	mustSend(t, c, dataBuf(p, 0))
	want := "0:data[0]"
	for id := 1; id <= 20; id++ {
		mustSend(t, c, barrier(checkpoint.ID(id)))
		want += fmt.Sprintf(" 0:barrier%d", id)
	}
	if got := drain(g); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

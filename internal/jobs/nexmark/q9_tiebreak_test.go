package nexmark

import (
	"math/rand/v2"
	"testing"
)

// TestQ9TieBreak checks the winner's order on a hand-checked case and the
// engine's comparison (q9First, which compares the first three keys
// without the strings) against the reference's plain one on random bids
// drawn from small ranges, so that ties at every level are common.
func TestQ9TieBreak(t *testing.T) {
	bids := []q9Bid{
		{Bidder: 2, Price: 10, DateTime: 5, Extra: "b"},
		{Bidder: 1, Price: 10, DateTime: 5, Extra: "z"}, // beats the first: lower bidder
		{Bidder: 9, Price: 9, DateTime: 1, Extra: ""},   // lower price
		{Bidder: 1, Price: 10, DateTime: 5, Extra: "a"}, // beats the second: lower extra
		{Bidder: 7, Price: 10, DateTime: 6, Extra: ""},  // later
	}
	best := bids[0]
	for _, b := range bids[1:] {
		if q9First(&b, &best) {
			best = b
		}
	}
	if want := bids[3]; best != want {
		t.Fatalf("winner %+v, want %+v", best, want)
	}

	r := rand.New(rand.NewPCG(1, 2))
	extras := []string{"", "a", "b", "ab"}
	draw := func() q9Bid {
		return q9Bid{Bidder: r.Int64N(3), Price: r.Int64N(3), DateTime: r.Int64N(3), Extra: extras[r.IntN(len(extras))]}
	}
	for range 10_000 {
		x, y := draw(), draw()
		if got, want := q9First(&x, &y), q9Before(&x, &y); got != want {
			t.Fatalf("q9First(%+v, %+v) = %v, the reference's order says %v", x, y, got, want)
		}
	}
}

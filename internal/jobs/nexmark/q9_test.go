package nexmark_test

import "testing"

// TestQ9CleanupKeepsResult runs q9 with its state cleaned up as the
// watermark passes auctions and waiting bids (on heap only, as q4's).
func TestQ9CleanupKeepsResult(t *testing.T) {
	n := runSlow(t, "q9", 2, "heap")
	t.Logf("%d winners", n)
	if n < 20 {
		t.Fatalf("q9 has %d winners: too few for the test to prove much", n)
	}
}

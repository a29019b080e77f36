package nexmark_test

import "testing"

// TestQ9CleanupKeepsResult runs q9 with its state cleaned up as the
// watermark passes auctions and waiting bids.
func TestQ9CleanupKeepsResult(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		t.Run(backend, func(t *testing.T) {
			n := runSlow(t, "q9", 2, backend)
			t.Logf("%d winners", n)
			if n < 20 {
				t.Fatalf("q9 has %d winners: too few for the test to prove much", n)
			}
		})
	}
}

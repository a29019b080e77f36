package nexmark_test

import (
	"slices"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/nexmark"
	q "github.com/weirstream/weir/internal/jobs/nexmark"
)

// TestQ7WindowEndIsInclusive checks by hand that a bid at exactly a
// window's end joins that window's maximum when its price equals it
// (BETWEEN is inclusive), besides its own window's, in the engine and in
// the reference.
func TestQ7WindowEndIsInclusive(t *testing.T) {
	const t0 = 1_000_000 // a window start
	bid := func(auction, price, ts int64) nexmark.Event {
		return nexmark.Event{Kind: nexmark.KindBid, Bid: nexmark.Bid{Auction: auction, Bidder: 7, Price: price, DateTime: ts, Extra: "x"}}
	}
	events := []nexmark.Event{
		bid(1, 50, t0),        // at the end of a window without bids: joins nothing there
		bid(2, 70, t0+5_000),  // window 1's maximum
		bid(3, 70, t0+9_999),  // window 1's maximum again
		bid(4, 70, t0+10_000), // window 2's start = window 1's end, at window 1's maximum
		bid(5, 20, t0+10_000), // at window 1's end below its maximum
		bid(6, 90, t0+15_000), // window 2's maximum
		bid(7, 90, t0+20_000), // at window 2's end at its maximum, and window 3's only bid
	}
	want := []string{
		"2,70,7,1005000,x", "3,70,7,1009999,x", "4,70,7,1010000,x",
		"6,90,7,1015000,x", "7,90,7,1020000,x", "7,90,7,1020000,x",
	}
	ref := q.Q7Events(events)
	slices.Sort(ref)
	if !slices.Equal(ref, want) {
		t.Fatalf("reference: got %q, want %q", ref, want)
	}
	query, err := q.Lookup("q7")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 2} {
		got := windowedRun(t, query, q.Params{Gen: nexmark.DefaultConfig()}, p, "heap", func(env *weir.Env) weir.Stream[nexmark.Event] {
			src := datagen.New(func(i int64) nexmark.Event { return events[i] }, datagen.WithCount(int64(len(events))))
			return weir.FromSourceWithWatermarks(env, src, nexmark.Watermarks()).Name("events").UID("events")
		})
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("p=%d: got %q, want %q", p, got, want)
		}
	}
}

package nexmark

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/connectors/nexmark"
)

func q19Lines(cs []Change[q19Row]) []string {
	var ls []string
	for _, c := range cs {
		ls = append(ls, string(c.AppendCSV(nil)))
	}
	return ls
}

// TestQ19Changelog checks q19's per-position changelog on a hand-made
// sequence: +I while the list fills, -U/+U for each shifted position, the
// 10th row's retraction by its position's -U, and a bid that does not
// enter changing nothing.
func TestQ19Changelog(t *testing.T) {
	bid := func(price, dt int64) nexmark.Bid {
		return nexmark.Bid{Auction: 1, Bidder: 2, Price: price, Channel: "c", URL: "u", DateTime: dt}
	}
	var top q19Top
	var out []Change[q19Row]
	for i := range int64(10) {
		b := bid(100-i, i) // descending prices: each enters last
		var changed bool
		changed, out = q19Insert(&top, &b, out[:0])
		if want := []string{string(Change[q19Row]{Insert, q19Row{b, i + 1}}.AppendCSV(nil))}; !changed || !slices.Equal(q19Lines(out), want) {
			t.Fatalf("bid %d: %q, want %q", i, q19Lines(out), want)
		}
	}
	// Price 93 at time 20 ties with rank 8's price (93 at time 7) and
	// ranks after it (earlier dateTime first): it enters at rank 9,
	// shifting rank 9 to 10 and dropping rank 10 (price 91).
	b := bid(93, 20)
	_, out = q19Insert(&top, &b, out[:0])
	want := []string{
		"-U,1,2,92,c,u,8,,9", "+U,1,2,93,c,u,20,,9",
		"-U,1,2,91,c,u,9,,10", "+U,1,2,92,c,u,8,,10",
	}
	if !slices.Equal(q19Lines(out), want) {
		t.Fatalf("changes %q, want %q", q19Lines(out), want)
	}
	for _, b := range []nexmark.Bid{bid(92, 9), bid(91, 0), bid(92, 8)} {
		if changed, out := q19Insert(&top, &b, out[:0]); changed || len(out) != 0 {
			t.Fatalf("%+v changed the full list: %q", b, q19Lines(out))
		}
	}
	price := int64(1000)
	if n := testing.AllocsPerRun(100, func() {
		price++ // a new best bid: shifts every position
		b := bid(price, 0)
		_, out = q19Insert(&top, &b, out[:0])
	}); n != 0 {
		t.Fatalf("q19Insert allocates %v times", n)
	}
	var line []byte
	if n := testing.AllocsPerRun(100, func() { line = out[0].AppendCSV(line[:0]) }); n != 0 {
		t.Fatalf("q19 AppendCSV allocates %v times", n)
	}
}

// TestQ19Floor checks the full list's floor against the list's order.
func TestQ19Floor(t *testing.T) {
	f := q19Floor{Price: 10, DateTime: 5, Bidder: 3}
	fb := nexmark.Bid{Price: 10, DateTime: 5, Bidder: 3, Channel: "m"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		b := nexmark.Bid{Price: 9 + r.Int64N(3), DateTime: 4 + r.Int64N(3), Bidder: 2 + r.Int64N(3), Channel: string(rune('l' + r.IntN(3)))}
		// after must imply that b ranks after every bid with f's columns.
		if f.after(&b) && q19Before(&b, &fb) <= 0 {
			t.Fatalf("floor %+v says %+v is after it, but it ranks before %+v", f, b, fb)
		}
		// And it may only defer to the full check on a tie of its columns.
		if !f.after(&b) && q19Before(&b, &fb) > 0 && (b.Price != 10 || b.DateTime != 5 || b.Bidder != 3) {
			t.Fatalf("floor %+v does not reject %+v", f, b)
		}
	}
}

// TestRankOrderIndependent feeds the same bids, with many ties, in many
// orders through q18's and q19's step functions: the changelog must apply
// cleanly and give the same final table every time.
func TestRankOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var bids []nexmark.Bid
	for range 40 {
		bids = append(bids, nexmark.Bid{Auction: 1 + r.Int64N(2), Bidder: 1 + r.Int64N(2), Price: 1 + r.Int64N(4),
			Channel: []string{"a", "b"}[r.IntN(2)], URL: "u", DateTime: r.Int64N(3), Extra: []string{"", "x"}[r.IntN(2)]})
	}
	var want18, want19 []string
	for round := range 50 {
		r.Shuffle(len(bids), func(i, j int) { bids[i], bids[j] = bids[j], bids[i] })
		var lines18, lines19 []string
		last := map[q18Key]nexmark.Bid{}
		tops := map[int64]*q19Top{}
		var out19 []Change[q19Row]
		for i := range bids {
			b := &bids[i]
			k := q18Key{b.Bidder, b.Auction}
			old, ok := last[k]
			var ch [2]Change[q18Row]
			n := q18Step(&old, ok, b, &ch)
			for _, c := range ch[:n] {
				lines18 = append(lines18, string(c.AppendCSV(nil)))
			}
			if n > 0 {
				last[k] = *b
			}
			if tops[b.Auction] == nil {
				tops[b.Auction] = &q19Top{}
			}
			_, out19 = q19Insert(tops[b.Auction], b, out19[:0])
			lines19 = append(lines19, q19Lines(out19)...)
		}
		t18, err := ApplyChangelog(lines18)
		if err != nil {
			t.Fatal(err)
		}
		t19, err := ApplyChangelog(lines19)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			want18, want19 = t18, t19
			if len(t18) != 4 || len(t19) != 20 {
				t.Fatalf("tables of %d and %d rows, want 4 and 20", len(t18), len(t19))
			}
			continue
		}
		if !slices.Equal(t18, want18) {
			t.Fatalf("q18 table depends on the order:\n%q\n%q", t18, want18)
		}
		if !slices.Equal(t19, want19) {
			t.Fatalf("q19 table depends on the order:\n%q\n%q", t19, want19)
		}
	}
}

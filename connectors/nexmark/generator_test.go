package nexmark

import (
	"math"
	"strings"
	"testing"
)

const testEvents = 100_000

// At(n) is a pure function of n: the same whatever the order of the
// calls and the instance.
func TestDeterminism(t *testing.T) {
	g1, g2 := NewGenerator(DefaultConfig()), NewGenerator(DefaultConfig())
	const n = 5000
	fwd := make([]Event, n)
	for i := range fwd {
		g1.At(int64(i), &fwd[i])
	}
	var e Event
	for i := n - 1; i >= 0; i -= 7 {
		g2.At(int64(i), &e)
		if e != fwd[i] {
			t.Fatalf("event %d differs between calls:\n%+v\n%+v", i, e, fwd[i])
		}
	}
	// Reusing an Event of another kind leaves no trace of it.
	for _, i := range []int64{49, 50, 51, 3, 0} {
		g2.At(i, &e)
		if e != fwd[i] {
			t.Fatalf("event %d after reuse:\n%+v\n%+v", i, e, fwd[i])
		}
	}
}

// A zero Config is Flink's default (but for BaseTime, 0 = the epoch).
func TestZeroConfig(t *testing.T) {
	d := DefaultConfig()
	d.BaseTime = 0
	if got := NewGenerator(Config{}).Config(); got != d {
		t.Fatalf("zero Config became %+v, want %+v", got, d)
	}
	var a, b Event
	NewGenerator(Config{}).At(123, &a)
	NewGenerator(d).At(123, &b)
	if a != b {
		t.Fatalf("zero Config: %+v, want %+v", a, b)
	}
}

func TestMixIdsAndTimes(t *testing.T) {
	cfg := DefaultConfig()
	g := NewGenerator(cfg)
	var e Event
	nextPerson, nextAuction := int64(firstPersonID), int64(firstAuctionID)
	prevTime := int64(math.MinInt64)
	var counts [3]int64
	for n := int64(0); n < testEvents; n++ {
		g.At(n, &e)
		counts[e.Kind]++
		want := KindBid
		if r := n % 50; r < 1 {
			want = KindPerson
		} else if r < 4 {
			want = KindAuction
		}
		if e.Kind != want || g.Kind(n) != want {
			t.Fatalf("event %d is kind %d, want %d", n, e.Kind, want)
		}
		ts := e.DateTime()
		if wantTS := cfg.BaseTime + int64(float64(n)*(1e6/cfg.FirstEventRate))/1000; ts != wantTS || ts != g.Timestamp(n) {
			t.Fatalf("event %d at %d, want %d", n, ts, wantTS)
		}
		if ts < prevTime {
			t.Fatalf("event %d at %d, before the previous event's %d", n, ts, prevTime)
		}
		prevTime = ts
		// The people and auctions generated so far: ids below these.
		people, auctions := nextPerson, nextAuction
		switch e.Kind {
		case KindPerson:
			p := e.Person
			if p.ID != nextPerson {
				t.Fatalf("event %d: person %d, want %d", n, p.ID, nextPerson)
			}
			nextPerson++
			if p.Name == "" || !strings.Contains(p.Name, " ") || !strings.HasSuffix(p.EmailAddress, ".com") || strings.Count(p.EmailAddress, "@") != 1 ||
				len(p.CreditCard) != 19 || p.City == "" || len(p.State) != 2 {
				t.Fatalf("event %d: person %+v", n, p)
			}
		case KindAuction:
			a := e.Auction
			if a.ID != nextAuction {
				t.Fatalf("event %d: auction %d, want %d", n, a.ID, nextAuction)
			}
			nextAuction++
			if a.Seller < firstPersonID || a.Seller >= people+personIDLead || a.Seller < people-1000 {
				t.Fatalf("event %d: seller %d, people %d … %d", n, a.Seller, firstPersonID, people-1)
			}
			if a.Category < 10 || a.Category >= 15 {
				t.Fatalf("event %d: category %d", n, a.Category)
			}
			if a.Expires <= a.DateTime {
				t.Fatalf("event %d: expires %d, not after %d", n, a.Expires, a.DateTime)
			}
			if a.InitialBid < 100 || a.InitialBid > 1e8 || a.Reserve < a.InitialBid+100 || a.Reserve > a.InitialBid+1e8 {
				t.Fatalf("event %d: initial bid %d, reserve %d", n, a.InitialBid, a.Reserve)
			}
			if len(a.ItemName) > 19 || len(a.Description) > 99 || strings.TrimSpace(a.ItemName) != a.ItemName {
				t.Fatalf("event %d: item %q, description %q", n, a.ItemName, a.Description)
			}
		case KindBid:
			b := e.Bid
			if b.Bidder < firstPersonID || b.Bidder >= people+personIDLead || b.Bidder < people-1000 {
				t.Fatalf("event %d: bidder %d, people %d … %d", n, b.Bidder, firstPersonID, people-1)
			}
			if b.Auction < firstAuctionID || b.Auction >= auctions+auctionIDLead || b.Auction < auctions-1-100 {
				t.Fatalf("event %d: auction %d, auctions %d … %d", n, b.Auction, firstAuctionID, auctions-1)
			}
			if b.Price < 100 || b.Price > 1e8 {
				t.Fatalf("event %d: price %d", n, b.Price)
			}
			if !strings.HasPrefix(b.URL, "https://www.nexmark.com/") || !strings.Contains(b.URL, "/item.htm?query=1") || b.Channel == "" {
				t.Fatalf("event %d: channel %q, url %q", n, b.Channel, b.URL)
			}
		}
	}
	p, a, b := g.Counts(testEvents)
	if counts != [3]int64{p, a, b} || p != testEvents/50 || a != 3*testEvents/50 {
		t.Fatalf("counts %v, Counts %d %d %d", counts, p, a, b)
	}
	for _, c := range []struct{ n, p, a, b int64 }{{0, 0, 0, 0}, {1, 1, 0, 0}, {3, 1, 2, 0}, {5, 1, 3, 1}, {51, 2, 3, 46}, {53, 2, 5, 46}} {
		if p, a, b := g.Counts(c.n); p != c.p || a != c.a || b != c.b {
			t.Errorf("Counts(%d) = %d %d %d, want %d %d %d", c.n, p, a, b, c.p, c.a, c.b)
		}
	}
}

// The distributions: sizes, hot shares, prices, channels.
func TestDistributions(t *testing.T) {
	g := NewGenerator(DefaultConfig())
	var e Event
	var size, count [3]float64
	var hotSeller, hotAuction, hotBidder, hotChannel, cold, withID float64
	var cheap float64
	people, auctions := int64(firstPersonID), int64(firstAuctionID)
	channels := map[string]bool{}
	for n := int64(0); n < testEvents; n++ {
		g.At(n, &e)
		size[e.Kind] += float64(e.Size())
		count[e.Kind]++
		switch e.Kind {
		case KindPerson:
			people++
		case KindAuction:
			auctions++
			if e.Auction.Seller == (people-1-firstPersonID)/100*100+firstPersonID {
				hotSeller++
			}
		case KindBid:
			b := e.Bid
			if b.Auction == (auctions-1-firstAuctionID)/100*100+firstAuctionID {
				hotAuction++
			}
			if b.Bidder == (people-1-firstPersonID)/100*100+1+firstPersonID {
				hotBidder++
			}
			if b.Price < 100_000 { // 10^(6u)·100 < 10^5 iff u < 1/2
				cheap++
			}
			switch b.Channel {
			case "Google", "Facebook", "Baidu", "Apple":
				hotChannel++
			default:
				cold++
				channels[b.Channel] = true
				if strings.Contains(b.URL, "&channel_id=") {
					withID++
				}
			}
		}
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s: %.4g, want %.4g ± %.0f%%", what, got, want, tol*100)
		}
	}
	near("average person size", size[KindPerson]/count[KindPerson], 200, 0.02)
	near("average auction size", size[KindAuction]/count[KindAuction], 500, 0.02)
	near("average bid size", size[KindBid]/count[KindBid], 100, 0.02)
	// The cold picks hit the hot id now and then: a little above 3/4, 1/2.
	near("hot sellers", hotSeller/count[KindAuction], 0.75, 0.05)
	near("hot auctions", hotAuction/count[KindBid], 0.5, 0.05)
	near("hot bidders", hotBidder/count[KindBid], 0.75, 0.05)
	near("prices below 1000.00", cheap/count[KindBid], 0.5, 0.03)
	near("hot channels", hotChannel/count[KindBid], 0.5, 0.03)
	near("cold channels with channel_id", withID/cold, 0.9, 0.03)
	if len(channels) < 9000 {
		t.Errorf("%d distinct cold channels, want most of 10000", len(channels))
	}
}

// channelID is Java's Math.abs(Integer.reverse(i)), MinInt32 included.
func TestChannelID(t *testing.T) {
	for i, want := range map[int]int32{0: 0, 1: math.MinInt32, 2: 1 << 30, 3: 1 << 30, 6: 3 << 29, 9999: 0x0f1c0000} {
		if got := channelID(i); got != want {
			t.Errorf("channelID(%d) = %d, want %d", i, got, want)
		}
	}
}

func TestPriceApprox(t *testing.T) {
	r := eventRand(7)
	for k := 0; k < 100_000; k++ {
		s := r
		u := s.float()
		got := r.price()
		want := math.Round(math.Pow(10, u*6) * 100)
		if math.Abs(float64(got)-want) > 1 || got < 100 || got > 100_000_000 {
			t.Fatalf("u %v: price %d, want %v", u, got, want)
		}
	}
}

func TestAtAllocatesNothing(t *testing.T) {
	g := NewGenerator(DefaultConfig())
	var e Event
	n := int64(0)
	if a := testing.AllocsPerRun(1000, func() {
		for range 50 {
			g.At(n, &e)
			n++
		}
	}); a != 0 {
		t.Fatalf("%v allocations per 50 events", a)
	}
}

func BenchmarkGeneratorAt(b *testing.B) {
	g := NewGenerator(DefaultConfig())
	var e Event
	b.ReportAllocs()
	cpu := startCPU()
	for i := 0; b.Loop(); i++ {
		g.At(int64(i), &e)
	}
	cpu.report(b)
}

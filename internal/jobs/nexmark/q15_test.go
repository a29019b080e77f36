package nexmark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/connectors/nexmark"
)

// TestDateFormat checks the civil-date arithmetic of DATE_FORMAT against
// package time, in UTC, over four centuries around the epoch (leap years,
// century years, negative days) and at the millisecond edges of days.
func TestDateFormat(t *testing.T) {
	var buf []byte
	for day := int64(-146097); day <= 146097*2; day += 29 {
		ms := day * msPerDay
		for _, off := range []int64{0, 1, msPerDay - 1} {
			tm := time.UnixMilli(ms + off).UTC()
			if got, want := epochDay(ms+off), day; got != want {
				t.Fatalf("epochDay(%d) = %d, want %d", ms+off, got, want)
			}
			buf = appendDay(buf[:0], epochDay(ms+off))
			if want := tm.Format("2006-01-02"); string(buf) != want {
				t.Fatalf("day %d: %s, want %s", day, buf, want)
			}
			buf = appendMinute(buf[:0], minuteOfDay(ms+off))
			if want := tm.Format("15:04"); string(buf) != want {
				t.Fatalf("%d: minute %s, want %s", ms+off, buf, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { buf = appendDay(buf[:0], 20454) }); n != 0 {
		t.Fatalf("appendDay allocates %v times", n)
	}
}

// TestDistinctCounts checks q15's counts on a hand-made sequence: the
// FILTER ranges' bounds, and bidders and auctions counted once per range.
func TestDistinctCounts(t *testing.T) {
	g := &distinctRef{}
	for _, b := range []struct{ bidder, auction, price int64 }{
		{1, 10, 9_999},     // rank1
		{1, 10, 10_000},    // rank2: bidder 1 and auction 10 new in rank2
		{2, 10, 100},       // rank1: bidder 2 new, auction 10 not
		{2, 11, 999_999},   // rank2
		{1, 11, 1_000_000}, // rank3
		{1, 11, 5_000_000}, // rank3 again: counts only the bid
	} {
		g.add(b.bidder, b.auction, b.price)
	}
	got := string(newQ15Row(20454, &g.c).AppendCSV(nil))
	// day, bids (6: 2,2,2), bidders (2: 2,2,1), auctions (2: 1,2,1)
	const want = "2026-01-01,6,2,2,2,2,2,2,1,2,1,2,1"
	if got != want {
		t.Fatalf("q15 row %s, want %s", got, want)
	}
	r16 := newQ16Row(q16Key{"Apple", 20454}, &distinctCounts{MaxMinute: 61})
	if got := string(r16.AppendCSV(nil)); got != "Apple,2026-01-01,01:01,0,0,0,0,0,0,0,0,0,0,0,0" {
		t.Fatalf("q16 row %s", got)
	}
	var buf []byte
	if n := testing.AllocsPerRun(100, func() { buf = newQ15Row(20454, &g.c).AppendCSV(buf[:0]) }); n != 0 {
		t.Fatalf("q15Row.AppendCSV allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = r16.AppendCSV(buf[:0]) }); n != 0 {
		t.Fatalf("q16Row.AppendCSV allocates %v times", n)
	}
}

// TestQ17Changelog checks q17's changes on a hand-made sequence of one
// group: +I for the first bid, then -U/+U pairs.
func TestQ17Changelog(t *testing.T) {
	k := q17Key{Auction: 7, Day: 20454}
	var acc q17Acc
	existed := false
	var lines []string
	var buf []Change[q17Row]
	for _, price := range []int64{100, 20_000, 5_000_000, 1} {
		acc, buf = q17Step(k, acc, existed, price, buf[:0])
		existed = true
		for _, c := range buf {
			lines = append(lines, string(c.AppendCSV(nil)))
		}
	}
	want := []string{
		"+I,7,2026-01-01,1,1,0,0,100,100,100,100",
		"-U,7,2026-01-01,1,1,0,0,100,100,100,100",
		"+U,7,2026-01-01,2,1,1,0,100,20000,10050,20100",
		"-U,7,2026-01-01,2,1,1,0,100,20000,10050,20100",
		"+U,7,2026-01-01,3,1,1,1,100,5000000,1673366,5020100",
		"-U,7,2026-01-01,3,1,1,1,100,5000000,1673366,5020100",
		"+U,7,2026-01-01,4,2,1,1,1,5000000,1255025,5020101",
	}
	if len(lines) != len(want) {
		t.Fatalf("changelog %q, want %q", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("line %d: %s, want %s", i, lines[i], want[i])
		}
	}
	if n := testing.AllocsPerRun(100, func() { acc, buf = q17Step(k, acc, true, 5, buf[:0]) }); n != 0 {
		t.Fatalf("q17Step allocates %v times", n)
	}
	var line []byte
	if n := testing.AllocsPerRun(100, func() { line = buf[0].AppendCSV(line[:0]) }); n != 0 {
		t.Fatalf("q17 AppendCSV allocates %v times", n)
	}
}

// TestQ18Order checks q18's total order: the latest dateTime wins, ties
// go to the higher price, then the greater channel, url and extra.
func TestQ18Order(t *testing.T) {
	base := nexmark.Bid{Auction: 1, Bidder: 2, Price: 5, Channel: "b", URL: "u", DateTime: 100, Extra: "x"}
	later := func(f func(*nexmark.Bid)) nexmark.Bid { b := base; f(&b); return b }
	for _, b := range []nexmark.Bid{
		later(func(b *nexmark.Bid) { b.DateTime = 101; b.Price = 1 }),
		later(func(b *nexmark.Bid) { b.Price = 6; b.Channel = "a" }),
		later(func(b *nexmark.Bid) { b.Channel = "c"; b.URL = "a" }),
		later(func(b *nexmark.Bid) { b.URL = "v"; b.Extra = "" }),
		later(func(b *nexmark.Bid) { b.Extra = "y" }),
	} {
		if q18Later(&b, &base) != 1 || q18Later(&base, &b) != -1 {
			t.Fatalf("%+v should be later than %+v", b, base)
		}
	}
	if q18Later(&base, &base) != 0 {
		t.Fatal("a bid is not equal to itself")
	}
}

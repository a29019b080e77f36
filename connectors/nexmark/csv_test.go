package nexmark

import (
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// WriteCSV's files read back with encoding/csv give exactly At's events.
func TestWriteCSV(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cfg := DefaultConfig()
	cfg.FirstEventRate = 1000 // times that move
	const events = 2017
	if err := WriteCSV(context.Background(), dir, cfg, events); err != nil {
		t.Fatal(err)
	}
	read := func(name, header string) [][]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := csv.NewReader(f)
		r.ReuseRecord = false
		recs, err := r.ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(recs[0], ",") != header {
			t.Fatalf("%s: header %q, want %q", name, recs[0], header)
		}
		return recs[1:]
	}
	people, auctions, bids := read(PersonFile, PersonHeader), read(AuctionFile, AuctionHeader), read(BidFile, BidHeader)
	g := NewGenerator(cfg)
	p, a, b := g.Counts(events)
	if int64(len(people)) != p || int64(len(auctions)) != a || int64(len(bids)) != b {
		t.Fatalf("%d people, %d auctions, %d bids; want %d, %d, %d", len(people), len(auctions), len(bids), p, a, b)
	}
	i64 := strconv.FormatInt
	var e Event
	var pi, ai, bi int
	for n := int64(0); n < events; n++ {
		g.At(n, &e)
		var got, want []string
		switch e.Kind {
		case KindPerson:
			x := e.Person
			got, want = people[pi], []string{i64(x.ID, 10), x.Name, x.EmailAddress, x.CreditCard, x.City, x.State, i64(x.DateTime, 10), x.Extra}
			pi++
		case KindAuction:
			x := e.Auction
			got, want = auctions[ai], []string{i64(x.ID, 10), x.ItemName, x.Description, i64(x.InitialBid, 10), i64(x.Reserve, 10),
				i64(x.DateTime, 10), i64(x.Expires, 10), i64(x.Seller, 10), i64(x.Category, 10), x.Extra}
			ai++
		case KindBid:
			x := e.Bid
			got, want = bids[bi], []string{i64(x.Auction, 10), i64(x.Bidder, 10), i64(x.Price, 10), x.Channel, x.URL, i64(x.DateTime, 10), x.Extra}
			bi++
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("event %d: read back %q, want %q", n, got, want)
		}
	}
}

func TestAppendField(t *testing.T) {
	for in, want := range map[string]string{
		"":           "",
		"plain text": "plain text",
		"a,b":        `"a,b"`,
		`say "hi"`:   `"say ""hi"""`,
		"two\nlines": "\"two\nlines\"",
		"cr\r":       "\"cr\r\"",
	} {
		if got := string(AppendField(nil, in)); got != want {
			t.Errorf("AppendField(%q) = %q, want %q", in, got, want)
		}
	}
}

// Errors name the file; a cancelled context stops the export.
func TestWriteCSVErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, AuctionFile), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteCSV(context.Background(), dir, DefaultConfig(), 10)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, AuctionFile)) {
		t.Fatalf("WriteCSV over a folder: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteCSV(ctx, t.TempDir(), DefaultConfig(), 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteCSV with a cancelled context: %v", err)
	}
}

func BenchmarkAppendCSV(b *testing.B) {
	g := NewGenerator(DefaultConfig())
	var e Event
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.At(int64(i), &e)
		buf = AppendCSV(buf[:0], &e)
	}
}

package nexmark

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The CSV files WriteCSV writes, and their header lines: the column names
// of Flink's Nexmark tables.
const (
	PersonFile  = "person.csv"
	AuctionFile = "auction.csv"
	BidFile     = "bid.csv"

	PersonHeader  = "id,name,emailAddress,creditCard,city,state,dateTime,extra"
	AuctionHeader = "id,itemName,description,initialBid,reserve,dateTime,expires,seller,category,extra"
	BidHeader     = "auction,bidder,price,channel,url,dateTime,extra"
)

// csvFile is one of WriteCSV's outputs.
type csvFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
}

func (c *csvFile) write(b []byte) error {
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("nexmark: writing %s: %w", c.path, err)
	}
	return nil
}

// WriteCSV writes events 0 … events−1 of cfg's generator to
// dir/person.csv, dir/auction.csv and dir/bid.csv (creating dir, replacing
// the files): RFC 4180, a header line of the column names, then one line
// per record, times as epoch milliseconds. It stops with ctx's error when
// ctx is cancelled.
func WriteCSV(ctx context.Context, dir string, cfg Config, events int64) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("nexmark: %w", err)
	}
	var files [3]*csvFile
	defer func() {
		for _, c := range files {
			if c == nil {
				continue
			}
			if err == nil {
				if ferr := c.w.Flush(); ferr != nil {
					err = fmt.Errorf("nexmark: writing %s: %w", c.path, ferr)
				}
			}
			if cerr := c.f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("nexmark: closing %s: %w", c.path, cerr)
			}
		}
	}()
	for i, name := range [...]string{PersonFile, AuctionFile, BidFile} {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("nexmark: %w", err)
		}
		files[i] = &csvFile{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}
	}
	for i, h := range [...]string{PersonHeader, AuctionHeader, BidHeader} {
		if err := files[i].write([]byte(h + "\n")); err != nil {
			return err
		}
	}
	g := NewGenerator(cfg)
	var e Event
	buf := make([]byte, 0, 4096)
	for n := int64(0); n < events; n++ {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		g.At(n, &e)
		buf = AppendCSV(buf[:0], &e)
		if err := files[e.Kind].write(buf); err != nil {
			return err
		}
	}
	return nil
}

// AppendCSV appends e's record as one CSV line (with its newline), in the
// column order of the header lines.
func AppendCSV(b []byte, e *Event) []byte {
	switch e.Kind {
	case KindPerson:
		b = AppendPerson(b, &e.Person)
	case KindAuction:
		b = AppendAuction(b, &e.Auction)
	default:
		b = AppendBid(b, &e.Bid)
	}
	return append(b, '\n')
}

// AppendPerson appends p's columns (id … extra), without a newline.
func AppendPerson(b []byte, p *Person) []byte {
	b = strconv.AppendInt(b, p.ID, 10)
	b = AppendField(append(b, ','), p.Name)
	b = AppendField(append(b, ','), p.EmailAddress)
	b = AppendField(append(b, ','), p.CreditCard)
	b = AppendField(append(b, ','), p.City)
	b = AppendField(append(b, ','), p.State)
	b = strconv.AppendInt(append(b, ','), p.DateTime, 10)
	return AppendField(append(b, ','), p.Extra)
}

// AppendAuction appends a's columns (id … extra), without a newline.
func AppendAuction(b []byte, a *Auction) []byte {
	b = strconv.AppendInt(b, a.ID, 10)
	b = AppendField(append(b, ','), a.ItemName)
	b = AppendField(append(b, ','), a.Description)
	b = strconv.AppendInt(append(b, ','), a.InitialBid, 10)
	b = strconv.AppendInt(append(b, ','), a.Reserve, 10)
	b = strconv.AppendInt(append(b, ','), a.DateTime, 10)
	b = strconv.AppendInt(append(b, ','), a.Expires, 10)
	b = strconv.AppendInt(append(b, ','), a.Seller, 10)
	b = strconv.AppendInt(append(b, ','), a.Category, 10)
	return AppendField(append(b, ','), a.Extra)
}

// AppendBid appends d's columns (auction … extra), without a newline.
func AppendBid(b []byte, d *Bid) []byte {
	b = strconv.AppendInt(b, d.Auction, 10)
	b = strconv.AppendInt(append(b, ','), d.Bidder, 10)
	b = strconv.AppendInt(append(b, ','), d.Price, 10)
	b = AppendField(append(b, ','), d.Channel)
	b = AppendField(append(b, ','), d.URL)
	b = strconv.AppendInt(append(b, ','), d.DateTime, 10)
	return AppendField(append(b, ','), d.Extra)
}

// AppendField appends s as an RFC 4180 field: quoted, its quotes doubled,
// if it holds a comma, a quote, CR or LF.
func AppendField(b []byte, s string) []byte {
	quote := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\r' || c == '\n' {
			quote = true
			break
		}
	}
	if !quote {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

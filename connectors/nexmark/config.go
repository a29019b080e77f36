package nexmark

import "time"

// Config is the generator's configuration: nexmark/nexmark's
// GeneratorConfig and the NexmarkConfiguration knobs it reads.
// DefaultConfig gives Flink's benchmark defaults. A zero field (or a
// negative one, or a FirstEventRate that is not a positive number) means
// its default: NewGenerator fills it in, so Config{} is safe. BaseTime is
// the exception: 0 is the epoch, a valid instant, and is kept.
type Config struct {
	// FirstEventRate is the event-time rate: events per second of event
	// time (--first-event-rate). Event n's dateTime is
	// BaseTime + ⌊⌊n·(10⁶/FirstEventRate)⌋ / 1000⌋ ms (Flink's
	// timestampForEvent with one event generator).
	FirstEventRate float64
	// BaseTime is the first event's dateTime, epoch ms (--base-time).
	BaseTime int64

	// PersonProportion, AuctionProportion and BidProportion are the event
	// mix: of every Person+Auction+Bid consecutive event numbers, the first
	// PersonProportion are people, the next AuctionProportion auctions,
	// the rest bids (1, 3, 46).
	PersonProportion, AuctionProportion, BidProportion int
	// NumInFlightAuctions is how many recent auctions a cold bid picks
	// from, and sets the auctions' length (100).
	NumInFlightAuctions int
	// NumActivePeople is how many recent people a cold seller or bidder
	// is picked from (1000).
	NumActivePeople int
	// HotAuctionRatio, HotSellersRatio and HotBiddersRatio: a bid is for
	// a hot auction with probability 1 − 1/HotAuctionRatio (2), an auction
	// has a hot seller with 1 − 1/HotSellersRatio (4), a bid a hot bidder
	// with 1 − 1/HotBiddersRatio (4).
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int
	// AvgPersonByteSize, AvgAuctionByteSize and AvgBidByteSize are the
	// average sizes the extra field pads each record to (200, 500, 100),
	// in Flink's measure (see Size).
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
}

// DefaultBaseTime is the default --base-time: a fixed instant, so that
// results are reproducible (2026-01-01T00:00:00Z).
var DefaultBaseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// DefaultConfig is Flink's Nexmark benchmark configuration.
func DefaultConfig() Config {
	return Config{
		FirstEventRate:      10_000_000,
		BaseTime:            DefaultBaseTime,
		PersonProportion:    1,
		AuctionProportion:   3,
		BidProportion:       46,
		NumInFlightAuctions: 100,
		NumActivePeople:     1000,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		AvgPersonByteSize:   200,
		AvgAuctionByteSize:  500,
		AvgBidByteSize:      100,
	}
}

// withDefaults returns c with every unset field at its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if !(c.FirstEventRate > 0) {
		c.FirstEventRate = d.FirstEventRate
	}
	for _, f := range []struct{ v, d *int }{
		{&c.PersonProportion, &d.PersonProportion},
		{&c.AuctionProportion, &d.AuctionProportion},
		{&c.BidProportion, &d.BidProportion},
		{&c.NumInFlightAuctions, &d.NumInFlightAuctions},
		{&c.NumActivePeople, &d.NumActivePeople},
		{&c.HotAuctionRatio, &d.HotAuctionRatio},
		{&c.HotSellersRatio, &d.HotSellersRatio},
		{&c.HotBiddersRatio, &d.HotBiddersRatio},
		{&c.AvgPersonByteSize, &d.AvgPersonByteSize},
		{&c.AvgAuctionByteSize, &d.AvgAuctionByteSize},
		{&c.AvgBidByteSize, &d.AvgBidByteSize},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return c
}

// WatermarkDelay is the bound on out-of-orderness of Flink's Nexmark DDL:
// WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND.
const WatermarkDelay = 4 * time.Second

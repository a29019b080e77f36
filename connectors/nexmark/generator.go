package nexmark

// The generator of nexmark/nexmark (nexmark-flink's NexmarkGenerator,
// GeneratorConfig and generator/model/*), with one event generator and
// outOfOrderGroupSize 1, so that event n is the n-th event id and the
// times are monotonic in n. The randomness is per event (see doc.go).

// Fixed constants of Flink's generator.
const (
	firstPersonID    = 1000 // GeneratorConfig.FIRST_PERSON_ID
	firstAuctionID   = 1000 // GeneratorConfig.FIRST_AUCTION_ID
	firstCategory    = 10   // GeneratorConfig.FIRST_CATEGORY_ID
	numCategories    = 5
	personIDLead     = 10  // how far past the last person a cold pick may go
	auctionIDLead    = 10  // how far past the last auction a cold pick may go
	hotBatch         = 100 // HOT_SELLER_RATIO, HOT_AUCTION_RATIO, HOT_BIDDER_RATIO
	hotChannelsRatio = 2
)

// Generator produces event n as a pure function of n and its Config. It
// is immutable: one Generator may serve any number of goroutines.
type Generator struct {
	cfg  Config
	tabs *tables

	total, people, auctions int64 // the proportions; people+auctions = first bid offset
	delayUs                 float64
	// horizonEvents is how many events it takes to generate
	// NumInFlightAuctions auctions (nextAuctionLengthMs).
	horizonEvents                       int64
	inFlight, active                    int64
	hotAuctions, hotSellers, hotBidders int64
	avgPerson, avgAuction, avgBid       int64
}

// NewGenerator returns a generator for cfg, its unset fields at their
// defaults (see Config).
func NewGenerator(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	g := &Generator{
		cfg:         cfg,
		tabs:        getTables(),
		total:       int64(cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion),
		people:      int64(cfg.PersonProportion),
		auctions:    int64(cfg.AuctionProportion),
		delayUs:     1_000_000.0 / cfg.FirstEventRate,
		inFlight:    int64(cfg.NumInFlightAuctions),
		active:      int64(cfg.NumActivePeople),
		hotAuctions: int64(cfg.HotAuctionRatio),
		hotSellers:  int64(cfg.HotSellersRatio),
		hotBidders:  int64(cfg.HotBiddersRatio),
		avgPerson:   int64(cfg.AvgPersonByteSize),
		avgAuction:  int64(cfg.AvgAuctionByteSize),
		avgBid:      int64(cfg.AvgBidByteSize),
	}
	g.horizonEvents = g.inFlight * g.total / g.auctions
	return g
}

// Config is the generator's configuration, with the defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Kind is the kind of event n.
func (g *Generator) Kind(n int64) Kind {
	switch _, off := g.split(n); {
	case off < g.people:
		return KindPerson
	case off < g.people+g.auctions:
		return KindAuction
	}
	return KindBid
}

// Timestamp is event n's dateTime, epoch ms: Flink's timestampForEvent,
// BaseTime + ⌊n·interEventDelayUs⌋/1000 with interEventDelayUs =
// 10⁶/FirstEventRate (a float64 product, truncated, then an integer
// division). It is non-decreasing in n.
func (g *Generator) Timestamp(n int64) int64 {
	return g.cfg.BaseTime + int64(float64(n)*g.delayUs)/1000
}

// Counts returns how many of the events 0 … events−1 are people, auctions
// and bids.
func (g *Generator) Counts(events int64) (people, auctions, bids int64) {
	if events <= 0 {
		return 0, 0, 0
	}
	epochs, rem := events/g.total, events%g.total
	people = epochs*g.people + min(rem, g.people)
	auctions = epochs*g.auctions + min(max(rem-g.people, 0), g.auctions)
	return people, auctions, events - people - auctions
}

// split returns event n's epoch (n div the total proportion) and offset
// in it (n mod the total), dividing by a constant for the default 50.
func (g *Generator) split(n int64) (epoch, off int64) {
	if g.total == 50 {
		return n / 50, n % 50
	}
	return n / g.total, n % g.total
}

// lastPerson is Flink's lastBase0PersonId: the base-0 id of the last
// person generated at or before the event at offset off of epoch.
func (g *Generator) lastPerson(epoch, off int64) int64 {
	if off >= g.people {
		off = g.people - 1
	}
	return epoch*g.people + off
}

// lastAuction is Flink's lastBase0AuctionId: the base-0 id of the last
// auction generated at or before the event at offset off of epoch (−1
// before the first).
func (g *Generator) lastAuction(epoch, off int64) int64 {
	switch {
	case off < g.people:
		epoch--
		off = g.auctions - 1
	case off >= g.people+g.auctions:
		off = g.auctions - 1
	default:
		off -= g.people
	}
	return epoch*g.auctions + off
}

// nextPerson is Flink's nextBase0PersonId: one of the NumActivePeople
// latest people or up to personIDLead beyond the last (one draw).
func (g *Generator) nextPerson(lastPerson int64, r *rng) int64 {
	people := lastPerson + 1
	active := min(people, g.active)
	return people - active + r.intn(active+personIDLead)
}

// nextAuction is Flink's nextBase0AuctionId: one of the
// NumInFlightAuctions+1 latest auctions or up to auctionIDLead beyond the
// last (one draw).
func (g *Generator) nextAuction(lastAuction int64, r *rng) int64 {
	hi := lastAuction
	lo := max(hi-g.inFlight, 0)
	return lo + r.intn(hi-lo+1+auctionIDLead)
}

// At stores event n (n ≥ 0) in e. It allocates nothing: e's strings point
// into immutable tables shared by all generators.
//
// Event n is a pure function of n and the Config: its draws come from a
// splitmix64 stream of its own, starting at state
// mix64(uint64(n) XOR 0x016b72616d78656e), in the order the package doc
// lists (Flink's order, one length and one offset per string).
func (g *Generator) At(n int64, e *Event) {
	r := eventRand(n)
	ts := g.Timestamp(n)
	epoch, off := g.split(n)
	switch {
	case off < g.people:
		e.Kind = KindPerson
		e.Auction, e.Bid = Auction{}, Bid{}
		g.person(epoch, off, &r, ts, &e.Person)
	case off < g.people+g.auctions:
		e.Kind = KindAuction
		e.Person, e.Bid = Person{}, Bid{}
		g.auction(n, epoch, off, &r, ts, &e.Auction)
	default:
		e.Kind = KindBid
		e.Person, e.Auction = Person{}, Auction{}
		g.bid(epoch, off, &r, ts, &e.Bid)
	}
}

// person is Flink's PersonGenerator.nextPerson.
func (g *Generator) person(epoch, off int64, r *rng, ts int64, p *Person) {
	t := g.tabs
	first := r.intn(int64(len(firstNames)))
	last := r.intn(int64(len(lastNames)))
	name := t.names[first*int64(len(lastNames))+last]
	email := t.emails[r.intn(numEmails)]
	card := t.card(r)
	city := usCities[r.intn(int64(len(usCities)))]
	state := usStates[r.intn(int64(len(usStates)))]
	size := int64(8 + len(name) + len(email) + len(card) + len(city) + len(state))
	*p = Person{
		ID:           g.lastPerson(epoch, off) + firstPersonID,
		Name:         name,
		EmailAddress: email,
		CreditCard:   card,
		City:         city,
		State:        state,
		DateTime:     ts,
		Extra:        t.extra(r, size, g.avgPerson),
	}
}

// auction is Flink's AuctionGenerator.nextAuction.
func (g *Generator) auction(n, epoch, off int64, r *rng, ts int64, a *Auction) {
	t := g.tabs
	lastPerson := g.lastPerson(epoch, off)
	var seller int64
	if r.intn(g.hotSellers) > 0 {
		seller = lastPerson / hotBatch * hotBatch
	} else {
		seller = g.nextPerson(lastPerson, r)
	}
	category := firstCategory + r.intn(numCategories)
	initialBid := r.price()
	// nextAuctionLengthMs: on average the time until NumInFlightAuctions
	// more auctions have been generated.
	horizon := g.Timestamp(n+g.horizonEvents) - ts
	expires := ts + 1 + r.intn(max(2*horizon, 1))
	name := t.text(r, 20)
	desc := t.text(r, 100)
	reserve := initialBid + r.price()
	size := int64(8 + len(name) + len(desc) + 8 + 8 + 8 + 8 + 8)
	*a = Auction{
		ID:          g.lastAuction(epoch, off) + firstAuctionID,
		ItemName:    name,
		Description: desc,
		InitialBid:  initialBid,
		Reserve:     reserve,
		DateTime:    ts,
		Expires:     expires,
		Seller:      seller + firstPersonID,
		Category:    category,
		Extra:       t.extra(r, size, g.avgAuction),
	}
}

// bid is Flink's BidGenerator.nextBid, except that the bidder is a real
// person id (Flink adds FIRST_PERSON_ID twice; see doc.go).
func (g *Generator) bid(epoch, off int64, r *rng, ts int64, b *Bid) {
	t := g.tabs
	lastAuction := g.lastAuction(epoch, off)
	var auction int64
	if r.intn(g.hotAuctions) > 0 {
		auction = lastAuction / hotBatch * hotBatch
	} else {
		auction = g.nextAuction(lastAuction, r)
	}
	lastPerson := g.lastPerson(epoch, off)
	var bidder int64
	if r.intn(g.hotBidders) > 0 {
		// The second person of the batch, so that hot bidders and hot
		// sellers differ.
		bidder = lastPerson/hotBatch*hotBatch + 1
	} else {
		bidder = g.nextPerson(lastPerson, r)
	}
	price := r.price()
	var channel, url string
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(int64(len(hotChannels)))
		channel, url = hotChannels[i], t.hotURLs[i]
	} else {
		i := r.intn(numChannels)
		c := &t.channels[i]
		channel, url = c.name, c.url
	}
	*b = Bid{
		Auction:  auction + firstAuctionID,
		Bidder:   bidder + firstPersonID,
		Price:    price,
		Channel:  channel,
		URL:      url,
		DateTime: ts,
		Extra:    t.extra(r, 8+8+8+8, g.avgBid),
	}
}

// Size is the record's size in Flink's measure, the currentSize its
// generator pads with extra, plus the extra: 8 per number field it counts
// and the lengths of the strings it counts. Person: 8 (id) + name, e-mail,
// credit card, city, state. Auction: 8 (id) + item name + description +
// 5·8. Bid: 4·8. (Flink leaves out the person's dateTime, the auction's
// category and the bid's channel and url.)
func (e *Event) Size() int {
	switch e.Kind {
	case KindPerson:
		p := &e.Person
		return 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + len(p.Extra)
	case KindAuction:
		a := &e.Auction
		return 8 + len(a.ItemName) + len(a.Description) + 5*8 + len(a.Extra)
	}
	return 4*8 + len(e.Bid.Extra)
}

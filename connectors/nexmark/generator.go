package nexmark

// PROVISIONAL: a first generator with the id rules of nexmark/nexmark and
// simple strings, so that queries can be written against the API; the
// faithful one replaces the body of At.

const (
	firstPersonID  = 1000
	firstAuctionID = 1000
	firstCategory  = 10
	personProp     = 1
	auctionProp    = 3
	totalProp      = 50
	inFlight       = 100
	activePeople   = 1000
)

// Generator produces event n as a pure function of n and its Config.
type Generator struct {
	cfg Config
}

// NewGenerator returns a generator for cfg.
func NewGenerator(cfg Config) *Generator { return &Generator{cfg: cfg} }

// Config is the generator's configuration.
func (g *Generator) Config() Config { return g.cfg }

type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
func (r *rng) intn(n int64) int64 { return int64(r.next() % uint64(n)) }

func lastPerson(id int64) int64 {
	epoch, off := id/totalProp, id%totalProp
	if off >= personProp {
		off = personProp - 1
	}
	return epoch*personProp + off
}

func lastAuction(id int64) int64 {
	epoch, off := id/totalProp, id%totalProp
	switch {
	case off < personProp:
		epoch--
		off = auctionProp - 1
	case off >= personProp+auctionProp:
		off = auctionProp - 1
	default:
		off -= personProp
	}
	return epoch*auctionProp + off
}

func nextPerson(id int64, r *rng) int64 {
	n := lastPerson(id) + 1
	a := min(n, activePeople)
	return n - a + r.intn(a+10)
}

func nextAuction(id int64, r *rng) int64 {
	hi := lastAuction(id)
	lo := max(hi-inFlight, 0)
	return lo + r.intn(hi-lo+1+10)
}

var (
	states = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	cities = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	pool   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

func price(r *rng) int64 {
	x := r.intn(6_000_000)
	return 100 + x*x/36_000
}

// At stores event n in e.
func (g *Generator) At(n int64, e *Event) {
	r := rng(n)
	ts := g.cfg.BaseTime + int64(float64(n)*1000/g.cfg.FirstEventRate)
	*e = Event{}
	switch rem := n % totalProp; {
	case rem < personProp:
		e.Kind = KindPerson
		e.Person = Person{ID: lastPerson(n) + firstPersonID, Name: "Peter Smith", EmailAddress: "a@b.com", CreditCard: "1234 5678 1234 5678",
			City: cities[r.intn(10)], State: states[r.intn(6)], DateTime: ts, Extra: pool[:r.intn(60)]}
	case rem < personProp+auctionProp:
		e.Kind = KindAuction
		ib := price(&r)
		e.Auction = Auction{ID: lastAuction(n) + firstAuctionID, ItemName: pool[:20], Description: pool[:100], InitialBid: ib, Reserve: ib + price(&r),
			DateTime: ts, Expires: ts + 1 + r.intn(20), Seller: nextPerson(n, &r) + firstPersonID, Category: firstCategory + r.intn(5), Extra: pool[:r.intn(100)]}
	default:
		e.Kind = KindBid
		var a int64
		if r.intn(2) > 0 {
			a = lastAuction(n) / 100 * 100
		} else {
			a = nextAuction(n, &r)
		}
		var b int64
		if r.intn(4) > 0 {
			b = lastPerson(n)/100*100 + 1
		} else {
			b = nextPerson(n, &r)
		}
		ch := []string{"Google", "Facebook", "Baidu", "Apple", "channel-7"}[r.intn(5)]
		e.Bid = Bid{Auction: a + firstAuctionID, Bidder: b + firstPersonID, Price: price(&r), Channel: ch,
			URL: "https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=42", DateTime: ts, Extra: pool[:r.intn(50)]}
	}
}

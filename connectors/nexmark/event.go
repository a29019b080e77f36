package nexmark

// Kind says which of an Event's three records is meaningful.
type Kind uint8

// The three Nexmark streams. The numbers match Flink's nexmark
// event_type column (0 person, 1 auction, 2 bid).
const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

// Person is a new user of the auction site. Times are epoch milliseconds.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is an item put up for sale by Seller, open from DateTime until
// Expires.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is Bidder's offer of Price for Auction.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one generated event: Kind selects which of Person, Auction and
// Bid holds it; the other two are zero. A flat value rather than an
// interface or pointers, so that generating and shipping an event does not
// allocate (its strings point into the generator's immutable pools).
type Event struct {
	Kind    Kind
	Person  Person
	Auction Auction
	Bid     Bid
}

// DateTime is the event's time, epoch milliseconds.
func (e *Event) DateTime() int64 {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

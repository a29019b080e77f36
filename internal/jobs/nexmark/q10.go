package nexmark

import (
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q10 logs every bid with its date and minute, for a partitioned file
// system sink.
//
//	INSERT INTO nexmark_q10  -- PARTITIONED BY (dt, hm), filesystem, csv
//	SELECT auction, bidder, price, `dateTime`, extra,
//	       DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
//	FROM bid;
//
// The two DATE_FORMAT columns are computed in UTC (dateTime is a
// TIMESTAMP(3) made from epoch milliseconds, so Flink formats the UTC
// wall clock), by hand from the day number and the minute of the day
// (proleptic Gregorian calendar, as java.time), without allocating:
// yyyy is the year of the era padded to four digits, with a '+' when it
// has more (Java's DateTimeFormatter 'yyyy'); HH is 00–23.
//
// Flink writes q10 to a filesystem table partitioned by (dt, hm), one
// folder per minute, rolled every minute. weir writes every row, all
// seven columns, as one CSV line through the exactly-once file sink like
// every other query: the partitioning is a layout of the same rows, and
// dt and hm are kept as columns so the output can be split by them.
func init() {
	register(&Query{
		Name:    "q10",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra", "dt", "hm"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.Map(Bids(events), func(b nexmark.Bid) q10Row {
				return newQ10Row(&b)
			}).Name("q10").UID("q10"), p)
			return nil
		},
		Reference: q10Ref,
	})
}

type q10Row struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
	Dt                               dateText // the date's text
	Hm                               uint16   // minute of the day, minuteText's index
}

func newQ10Row(b *nexmark.Bid) q10Row {
	r := q10Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra}
	r.Dt, r.Hm = dateFormat(b.DateTime)
	return r
}

func (r q10Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.DateTime, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.Extra)
	dst = append(dst, ',')
	dst = append(dst, r.Dt.b[:r.Dt.n]...)
	dst = append(dst, ',')
	return append(dst, minuteText[r.Hm][:]...)
}

// dateText is DATE_FORMAT(t, 'yyyy-MM-dd') held by value: 10 bytes for
// the years 1–9999 (BCE years print as their year of era, 1 BCE =
// "0001"), up to 16 ("+292278994-08-17") at the ends of the epoch-ms
// range.
type dateText struct {
	b [16]byte
	n uint8
}

func (d dateText) String() string { return string(d.b[:d.n]) }

const (
	msPerMinute = 60 * 1000
	msPerHour   = 60 * msPerMinute
)

// floorDivMod divides rounding towards −∞: 0 ≤ m < d.
func floorDivMod(a, d int64) (q, m int64) {
	q, m = a/d, a%d
	if m < 0 {
		q--
		m += d
	}
	return q, m
}

// civil is the proleptic Gregorian date of the day days after 1970-01-01
// (the days-from-civil inverse of H. Hinnant's chrono algorithms: 400-year
// eras of 146097 days, years starting in March).
func civil(days int64) (year int64, month, day int) {
	era, doe := floorDivMod(days+719468, 146097)           // day of era [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of era [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the March-based year [0, 365]
	mp := (5*doy + 2) / 153                                // month from March [0, 11]
	day = int(doy - (153*mp+2)/5 + 1)                      // [1, 31]
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// dateFormat is DATE_FORMAT(ms, 'yyyy-MM-dd') and DATE_FORMAT(ms, 'HH:mm')
// of the UTC time ms (epoch milliseconds): the day's text and the minute
// of the day (minuteText[hm] is its text). Both are computed per call, by
// value: a memo of the last day would be state shared by the subtasks.
func dateFormat(ms int64) (dt dateText, hm uint16) {
	days, rest := floorDivMod(ms, msPerDay)
	return formatDate(days), uint16(rest / msPerMinute)
}

// minuteText is 'HH:mm' of every minute of the day.
var minuteText = func() (t [24 * 60][5]byte) {
	for i := range t {
		h, m := i/60, i%60
		t[i] = [5]byte{byte('0' + h/10), byte('0' + h%10), ':', byte('0' + m/10), byte('0' + m%10)}
	}
	return t
}()

// formatDate is DATE_FORMAT('yyyy-MM-dd') of the day days after 1970-01-01.
func formatDate(days int64) (dt dateText) {
	y, mo, d := civil(days)
	if y <= 0 { // year of era: 0 is 1 BCE
		y = 1 - y
	}
	if y <= 9999 { // the common case: fixed positions
		dt.b = [16]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10), '-',
			byte('0' + mo/10), byte('0' + mo%10), '-', byte('0' + d/10), byte('0' + d%10)}
		dt.n = 10
		return dt
	}
	b := append(dt.b[:0], '+')
	b = strconv.AppendInt(b, y, 10)
	b = append(b, '-', byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10))
	dt.n = uint8(len(b))
	return dt
}

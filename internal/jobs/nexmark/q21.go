package nexmark

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q21 adds a channel_id column to the bids.
//
//	SELECT auction, bidder, price, channel,
//	    CASE
//	        WHEN lower(channel) = 'apple' THEN '0'
//	        WHEN lower(channel) = 'google' THEN '1'
//	        WHEN lower(channel) = 'facebook' THEN '2'
//	        WHEN lower(channel) = 'baidu' THEN '3'
//	        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
//	        END
//	    AS channel_id FROM bid
//	    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
//	          lower(channel) in ('apple', 'google', 'facebook', 'baidu');
//
// Neither function runs a regular expression or allocates: channelID
// finds the regexp's first (leftmost) match by hand, a substring of url
// (its tests compare it with regexp on many URLs), and hotChannelID
// compares channel with the four names as lower() would lowercase it. A
// bid of another channel whose url has no channel_id= parameter (the
// REGEXP_EXTRACT is NULL) is dropped by the WHERE; an empty parameter
// ("…&channel_id=" or "…&channel_id=&…") is an empty, not NULL, id and
// kept.
func init() {
	register(&Query{
		Name:    "q21",
		Columns: []string{"auction", "bidder", "price", "channel", "channel_id"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.FlatMap(Bids(events), func(b nexmark.Bid, out *weir.Collector[q21Row]) error {
				if r, ok := q21Of(&b); ok {
					out.Collect(r)
				}
				return nil
			}).Name("q21").UID("q21"), p)
			return nil
		},
		Reference: q21Ref,
	})
}

type q21Row struct {
	Auction, Bidder, Price int64
	Channel, ChannelID     string
}

func (r q21Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.Channel)
	dst = append(dst, ',')
	return nexmark.AppendField(dst, r.ChannelID)
}

// q21Of is q21's row for b and whether the WHERE keeps it.
func q21Of(b *nexmark.Bid) (q21Row, bool) {
	id, ok := hotChannelID(b.Channel)
	if !ok {
		if id, ok = channelID(b.URL); !ok {
			return q21Row{}, false
		}
	}
	return q21Row{b.Auction, b.Bidder, b.Price, b.Channel, id}, true
}

// hotChannelID is the CASE's id of a channel whose lower() is apple,
// google, facebook or baidu.
func hotChannelID(channel string) (string, bool) {
	switch len(channel) {
	case 5:
		if lowerIs(channel, "apple") {
			return "0", true
		}
		if lowerIs(channel, "baidu") {
			return "3", true
		}
	case 6:
		if lowerIs(channel, "google") {
			return "1", true
		}
	case 8:
		if lowerIs(channel, "facebook") {
			return "2", true
		}
	}
	if len(channel) > 8 && len(channel) <= 3*8 && !isASCII(channel) {
		// A non-ASCII character can lower to an ASCII letter: only the
		// Kelvin sign K (3 bytes), which becomes k.
		for _, h := range [...]struct{ name, id string }{{"apple", "0"}, {"google", "1"}, {"facebook", "2"}, {"baidu", "3"}} {
			if lowerIs(channel, h.name) {
				return h.id, true
			}
		}
	}
	return "", false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerIs reports whether lower(s) = target, target being lowercase
// ASCII. lower is Flink's: ASCII letters map to lowercase; otherwise Java's
// String.toLowerCase (in a locale other than Turkish), where of all
// non-ASCII characters only the Kelvin sign U+212A lowers to an ASCII
// letter (k; U+0130 İ lowers to two characters, i and U+0307).
func lowerIs(s, target string) bool {
	j := 0
	for i := 0; i < len(s); {
		if j == len(target) {
			return false
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != target[j] {
				return false
			}
			i++
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != '\u212A' || target[j] != 'k' {
			return false
		}
		i += size
		j++
	}
	return j == len(target)
}

// channelID is REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2): the
// value of the first "channel_id=" that starts url or follows an '&', up
// to the next '&' or the end; ok is false (NULL) when there is none.
// Java's Matcher.find returns the leftmost match, and a match's start is
// its '&' or 0, so the first such occurrence is the one.
func channelID(url string) (id string, ok bool) {
	const key = "channel_id="
	for i := 0; ; {
		j := strings.Index(url[i:], key)
		if j < 0 {
			return "", false
		}
		j += i
		if j == 0 || url[j-1] == '&' {
			v := url[j+len(key):]
			if k := strings.IndexByte(v, '&'); k >= 0 {
				v = v[:k]
			}
			return v, true
		}
		i = j + 1
	}
}

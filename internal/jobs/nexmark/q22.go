package nexmark

import (
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// q22 splits the bid's URL into its directories.
//
//	SELECT auction, bidder, price, channel,
//	    SPLIT_INDEX(url, '/', 3) as dir1,
//	    SPLIT_INDEX(url, '/', 4) as dir2,
//	    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
//
// SPLIT_INDEX is Flink's: url split at every '/', keeping empty parts
// ("https://host/a" is "https:", "", "host", "a"), the part at the 0-based
// index, NULL when there is no such part (and for an empty url, which has
// no parts at all). A NULL prints as an empty field, as Flink's CSV format
// writes NULL by default, so in the output it is indistinguishable from an
// empty part (e.g. the "" between "a//b"). The parts are substrings of
// url: nothing is allocated, and one pass finds all three.
func init() {
	register(&Query{
		Name:    "q22",
		Columns: []string{"auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"},
		Build: func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error {
			Sink(weir.Map(Bids(events), func(b nexmark.Bid) q22Row {
				return newQ22Row(&b)
			}).Name("q22").UID("q22"), p)
			return nil
		},
		Reference: q22Ref,
	})
}

type q22Row struct {
	Auction, Bidder, Price int64
	Channel                string
	Dir                    [3]string // "" for NULL
}

func newQ22Row(b *nexmark.Bid) q22Row {
	return q22Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, Dir: urlDirs(b.URL)}
}

func (r q22Row) AppendCSV(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.Auction, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Bidder, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Price, 10)
	dst = append(dst, ',')
	dst = nexmark.AppendField(dst, r.Channel)
	for _, d := range r.Dir {
		dst = append(dst, ',')
		dst = nexmark.AppendField(dst, d)
	}
	return dst
}

// urlDirs is SPLIT_INDEX(url, '/', i) for i = 3, 4, 5 in one pass, NULL
// as "".
func urlDirs(url string) (dirs [3]string) {
	if url == "" {
		return dirs
	}
	s := url
	for range 3 {
		j := strings.IndexByte(s, '/')
		if j < 0 {
			return dirs
		}
		s = s[j+1:]
	}
	for k := range dirs {
		j := strings.IndexByte(s, '/')
		if j < 0 {
			dirs[k] = s
			return dirs
		}
		dirs[k], s = s[:j], s[j+1:]
	}
	return dirs
}

// splitIndex is Flink's SPLIT_INDEX(s, sep, index) for a non-empty sep:
// the index-th (0-based) part of s split at every occurrence of sep, the
// empty parts kept (commons-lang's splitByWholeSeparatorPreserveAllTokens,
// which gives no parts for an empty s); ok is false (NULL) for a negative
// index or one past the last part.
func splitIndex(s, sep string, index int) (part string, ok bool) {
	if index < 0 || s == "" {
		return "", false
	}
	for ; index > 0; index-- {
		j := strings.Index(s, sep)
		if j < 0 {
			return "", false
		}
		s = s[j+len(sep):]
	}
	if j := strings.Index(s, sep); j >= 0 {
		s = s[:j]
	}
	return s, true
}

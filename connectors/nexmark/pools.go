package nexmark

import (
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// The immutable tables every generator shares: built once, on the first
// NewGenerator, from a fixed seed, and never written after. Generated
// strings are substrings of, or entries in, these tables, so that At
// allocates nothing.

var (
	usStates    = [...]string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities    = [...]string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames  = [...]string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames   = [...]string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	hotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"}
)

const (
	// extraPoolLen is the length of the pool extra fields are cut from
	// (Flink's REUSABLE_EXTRA_STRING is 1 MiB too).
	extraPoolLen = 1 << 20
	// textPoolLen is the length of the pool of letters and spaces item
	// names, descriptions and e-mail parts are cut from.
	textPoolLen = 1 << 18
	// numEmails is the number of distinct e-mail addresses.
	numEmails = 1 << 14
	// numCardGroups is the number of four-digit groups in the credit-card
	// pool; a card is 4 consecutive groups starting at any of the first
	// numCards.
	numCards      = 1 << 16
	numCardGroups = numCards + 3
	// numChannels is the number of cold channels (Flink's CHANNELS_NUMBER).
	numChannels = 10_000
	// tableSeed seeds the stream that builds the tables.
	tableSeed = -1
)

// channel is a cold channel: its name and URL side by side, one cache
// line to read.
type channel struct{ name, url string }

type tables struct {
	extraPool string // extraPoolLen letters a–z
	textPool  string // textPoolLen characters: ' ' with probability 1/13, else a–z
	names     [len(firstNames) * len(lastNames)]string
	emails    [numEmails]string
	cards     string // numCardGroups groups "dddd " (the last without the space)
	channels  [numChannels]channel
	hotURLs   [len(hotChannels)]string
}

var (
	tablesOnce sync.Once
	sharedTabs *tables
)

// getTables returns the shared tables, building them on first use.
func getTables() *tables {
	tablesOnce.Do(func() { sharedTabs = buildTables() })
	return sharedTabs
}

func buildTables() *tables {
	t := new(tables)
	r := eventRand(tableSeed)
	b := make([]byte, extraPoolLen)
	for i := 0; i < len(b); {
		// Eight letters per draw: the successive base-26 digits of the
		// draw read as a fraction.
		x := r.next()
		for k := 0; k < 8 && i < len(b); k++ {
			var d uint64
			d, x = bits.Mul64(x, 26)
			b[i] = byte('a' + d)
			i++
		}
	}
	t.extraPool = string(b)
	b = make([]byte, textPoolLen)
	for i := range b {
		b[i] = randChar(&r, ' ')
	}
	t.textPool = string(b)
	for i, f := range firstNames {
		for j, l := range lastNames {
			t.names[i*len(lastNames)+j] = f + " " + l
		}
	}
	// The e-mail addresses, Flink's nextString(7) + "@" + nextString(5) +
	// ".com" built char by char like Flink's, in one string.
	b = make([]byte, 0, numEmails*16)
	ends := make([]int, numEmails)
	for i := range t.emails {
		b = appendCharString(b, &r, 7, ' ')
		b = append(b, '@')
		b = appendCharString(b, &r, 5, ' ')
		b = append(b, ".com"...)
		ends[i] = len(b)
	}
	sliceAll(t.emails[:], string(b), 0, ends)
	b = make([]byte, 0, 5*numCardGroups)
	for i := 0; i < numCardGroups; i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		g := r.intn(10_000)
		b = append(b, byte('0'+g/1000), byte('0'+g/100%10), byte('0'+g/10%10), byte('0'+g%10))
	}
	t.cards = string(b)
	b = b[:0]
	urlEnds := make([]int, len(hotChannels)+numChannels)
	for i := range urlEnds {
		b = appendBaseURL(b, &r)
		if i >= len(hotChannels) && r.intn(10) > 0 {
			b = append(b, "&channel_id="...)
			b = strconv.AppendInt(b, int64(channelID(i-len(hotChannels))), 10)
		}
		urlEnds[i] = len(b)
	}
	urls := string(b)
	sliceAll(t.hotURLs[:], urls, 0, urlEnds[:len(hotChannels)])
	start := urlEnds[len(hotChannels)-1]
	for i, end := range urlEnds[len(hotChannels):] {
		t.channels[i].url = urls[start:end]
		start = end
	}
	b = b[:0]
	chEnds := make([]int, numChannels)
	for i := range t.channels {
		b = strconv.AppendInt(append(b, "channel-"...), int64(i), 10)
		chEnds[i] = len(b)
	}
	names := string(b)
	start = 0
	for i, end := range chEnds {
		t.channels[i].name = names[start:end]
		start = end
	}
	return t
}

// sliceAll sets dst[i] to s[ends[i−1]:ends[i]], ends[−1] being start.
func sliceAll(dst []string, s string, start int, ends []int) {
	for i, end := range ends {
		dst[i] = s[start:end]
		start = end
	}
}

// channelID is Java's Math.abs(Integer.reverse(i)): the bits of the 32-bit
// i reversed, made positive. Like Java's, abs(MinInt32) stays MinInt32
// (channel 1's id is -2147483648).
func channelID(i int) int32 {
	v := int32(bits.Reverse32(uint32(i)))
	if v < 0 {
		v = -v // wraps for MinInt32, as Math.abs does
	}
	return v
}

// randChar is one character of Flink's nextString: special with
// probability 1/13, else a letter.
func randChar(r *rng, special byte) byte {
	if r.intn(13) == 0 {
		return special
	}
	return byte('a' + r.intn(26))
}

// appendCharString appends Flink's nextString(maxLength, special),
// built char by char: 3 + intn(maxLength−3) characters, trimmed of spaces.
func appendCharString(b []byte, r *rng, maxLength int, special byte) []byte {
	n := 3 + int(r.intn(int64(maxLength-3)))
	start := len(b)
	for range n {
		b = append(b, randChar(r, special))
	}
	s := strings.Trim(string(b[start:]), " ")
	return append(b[:start], s...)
}

// appendBaseURL appends Flink's getBaseUrl: three random path parts (3 or
// 4 characters, '_' for a "space") under https://www.nexmark.com/.
func appendBaseURL(b []byte, r *rng) []byte {
	b = append(b, "https://www.nexmark.com/"...)
	for range 3 {
		b = append(appendCharString(b, r, 5, '_'), '/')
	}
	return append(b, "item.htm?query=1"...)
}

// text is Flink's nextString(maxLength): 3 + intn(maxLength−3) characters
// of letters and spaces (1 in 13), trimmed. Two draws: the length, then
// the offset into textPool.
func (t *tables) text(r *rng, maxLength int64) string {
	n := 3 + r.intn(maxLength-3)
	off := r.intn(textPoolLen - n + 1)
	s := t.textPool[off : off+n]
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// card is one credit-card number "dddd dddd dddd dddd" (one draw).
func (t *tables) card(r *rng) string {
	off := 5 * r.intn(numCards)
	return t.cards[off : off+19]
}

// extra is Flink's nextExtra: "" if currentSize already exceeds avg, else
// desired ± 20 % letters, desired = avg − currentSize, drawn as
// min + intn(2·delta) with delta = round(desired·0.2), min =
// desired − delta (the average is desired − ½). Two draws (none if delta
// is 0: then one): the length, then the offset into extraPool. A length
// above the pool's is cut to it.
func (t *tables) extra(r *rng, currentSize, avg int64) string {
	if currentSize > avg {
		return ""
	}
	desired := avg - currentSize
	delta := (2*desired + 5) / 10 // round(desired·0.2), half up, in integers
	n := desired - delta
	if delta > 0 {
		n += r.intn(2 * delta)
	}
	n = min(n, extraPoolLen)
	off := r.intn(extraPoolLen - n + 1)
	return t.extraPool[off : off+n]
}

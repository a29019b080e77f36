package nexmark

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/connectors/nexmark"
)

var channelIDRegexp = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

// regexpChannelID is REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) with
// a regular expression (Go's, leftmost-first like Java's Matcher.find).
func regexpChannelID(url string) (string, bool) {
	m := channelIDRegexp.FindStringSubmatch(url)
	if m == nil {
		return "", false
	}
	return m[2], true
}

func TestChannelIDMatchesRegexp(t *testing.T) {
	check := func(url string) {
		t.Helper()
		id, ok := channelID(url)
		wid, wok := regexpChannelID(url)
		if id != wid || ok != wok {
			t.Fatalf("channel_id of %q = %q, %v; regexp says %q, %v", url, id, ok, wid, wok)
		}
	}
	for _, c := range []struct {
		url string
		id  string
		ok  bool
	}{
		{"", "", false},
		{"channel_id=7", "7", true},
		{"channel_id=", "", true},
		{"a&channel_id=&b", "", true},
		{"https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=1234", "1234", true},
		{"https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1", "", false},
		{"https://x/item.htm?channel_id=5", "", false}, // after '?', not '&' or the start
		{"https://x/item.htm?xchannel_id=5&channel_id=6&channel_id=7", "6", true},
		{"&&channel_id=a=b&c", "a=b", true},
		{"channel_id=1&channel_id=2", "1", true},
		{"Channel_id=1", "", false},
		{"q=1&channel_id=\xff\xfe", "\xff\xfe", true},
	} {
		id, ok := channelID(c.url)
		if id != c.id || ok != c.ok {
			t.Errorf("channel_id of %q = %q, %v; want %q, %v", c.url, id, ok, c.id, c.ok)
		}
		check(c.url)
	}
	// Random URLs built of the pieces that matter.
	pieces := []string{"channel_id=", "&channel_id=", "channel_id", "&", "=", "x", "1", "_id=", "chan", "?", "/", "&&", "é", "\n"}
	rng := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	for range 8_000 {
		sb.Reset()
		for k := rng.IntN(8); k > 0; k-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		check(sb.String())
	}
	// The generator's URLs.
	g := nexmark.NewGenerator(nexmark.DefaultConfig())
	var e nexmark.Event
	for i := range int64(2_000) {
		if g.At(i, &e); e.Kind == nexmark.KindBid {
			check(e.Bid.URL)
		}
	}
}

func TestHotChannelID(t *testing.T) {
	for ch, want := range map[string]string{
		"Apple": "0", "apple": "0", "APPLE": "0", "aPpLe": "0",
		"Google": "1", "GOOGLE": "1", "Facebook": "2", "FaceBook": "2", "Baidu": "3", "bAIDU": "3",
		"faceboo\u212A": "2", // Kelvin sign: Java lowercases it to k
		"":              "", "Appl": "", "Apple ": "", " Apple": "", "Apples": "", "channel-1": "", "Baid\u00fc": "",
		"Ba\u0130du":     "", // İ lowers to i + U+0307
		"facebooK\u212A": "", "\xffpple": "",
	} {
		id, ok := hotChannelID(ch)
		if id != want || ok != (want != "") {
			t.Errorf("hotChannelID(%q) = %q, %v; want %q", ch, id, ok, want)
		}
	}
	// ASCII channels: as strings.ToLower.
	hot := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 5_000 {
		name := []byte([]string{"apple", "google", "facebook", "baidu", "appl", "googles"}[rng.IntN(6)])
		for i := range name {
			if rng.IntN(3) == 0 {
				name[i] -= 'a' - 'A'
			}
		}
		if rng.IntN(10) == 0 {
			name[rng.IntN(len(name))] = byte(rng.IntN(128))
		}
		want, wok := hot[strings.ToLower(string(name))]
		if id, ok := hotChannelID(string(name)); id != want || ok != wok {
			t.Fatalf("hotChannelID(%q) = %q, %v; want %q, %v", name, id, ok, want, wok)
		}
	}
}

func TestQ21DropsNullChannelID(t *testing.T) {
	for _, c := range []struct {
		channel, url, id string
		keep             bool
	}{
		{"Apple", "https://x/item.htm?query=1", "0", true},
		{"apple", "https://x/item.htm?query=1&channel_id=9", "0", true},
		{"channel-7", "https://x/item.htm?query=1&channel_id=9", "9", true},
		{"channel-7", "https://x/item.htm?query=1", "", false},
		{"channel-7", "https://x/item.htm?query=1&channel_id=", "", true},
	} {
		b := nexmark.Bid{Channel: c.channel, URL: c.url}
		r, ok := q21Of(&b)
		if ok != c.keep || r.ChannelID != c.id {
			t.Errorf("%s %s: %q, %v; want %q, %v", c.channel, c.url, r.ChannelID, ok, c.id, c.keep)
		}
	}
}

func BenchmarkRefQ21(b *testing.B) { benchStatelessRef(b, "q21") }

package nexmark

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// javaSplitIndex is SPLIT_INDEX by its definition: commons-lang's
// splitByWholeSeparatorPreserveAllTokens (no parts for "", otherwise every
// occurrence of sep splits, empty parts kept: strings.Split), then the
// part at index or NULL.
func javaSplitIndex(s, sep string, index int) (string, bool) {
	if s == "" || index < 0 {
		return "", false
	}
	parts := strings.Split(s, sep)
	if index >= len(parts) {
		return "", false
	}
	return parts[index], true
}

func TestSplitIndex(t *testing.T) {
	type res struct {
		s  string
		ok bool
	}
	url := "https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=1"
	for _, c := range []struct {
		s, sep string
		index  int
		want   res
	}{
		{url, "/", 0, res{"https:", true}},
		{url, "/", 1, res{"", true}},
		{url, "/", 2, res{"www.nexmark.com", true}},
		{url, "/", 3, res{"abcde", true}},
		{url, "/", 4, res{"fghij", true}},
		{url, "/", 5, res{"klmno", true}},
		{url, "/", 6, res{"item.htm?query=1&channel_id=1", true}},
		{url, "/", 7, res{"", false}},
		{url, "/", -1, res{"", false}},
		{"", "/", 0, res{"", false}}, // no parts at all
		{"/", "/", 0, res{"", true}},
		{"/", "/", 1, res{"", true}},
		{"/", "/", 2, res{"", false}},
		{"a", "/", 0, res{"a", true}},
		{"a", "/", 1, res{"", false}},
		{"a//b/", "/", 1, res{"", true}},
		{"a//b/", "/", 2, res{"b", true}},
		{"a//b/", "/", 3, res{"", true}},
		{"a//b/", "/", 4, res{"", false}},
		{"aaa", "aa", 0, res{"", true}},
		{"aaa", "aa", 1, res{"a", true}},
		{"a::b", "::", 1, res{"b", true}},
	} {
		s, ok := splitIndex(c.s, c.sep, c.index)
		if (res{s, ok}) != c.want {
			t.Errorf("SPLIT_INDEX(%q, %q, %d) = %q, %v; want %q, %v", c.s, c.sep, c.index, s, ok, c.want.s, c.want.ok)
		}
		if ws, wok := javaSplitIndex(c.s, c.sep, c.index); ws != s || wok != ok {
			t.Errorf("SPLIT_INDEX(%q, %q, %d) = %q, %v; strings.Split says %q, %v", c.s, c.sep, c.index, s, ok, ws, wok)
		}
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var sb strings.Builder
	for range 8_000 {
		sb.Reset()
		for k := rng.IntN(12); k > 0; k-- {
			sb.WriteString([]string{"/", "//", "a", "bc", ":", "é"}[rng.IntN(6)])
		}
		s := sb.String()
		for idx := -1; idx < 9; idx++ {
			got, ok := splitIndex(s, "/", idx)
			if want, wok := javaSplitIndex(s, "/", idx); got != want || ok != wok {
				t.Fatalf("SPLIT_INDEX(%q, '/', %d) = %q, %v; want %q, %v", s, idx, got, ok, want, wok)
			}
		}
		dirs := urlDirs(s)
		for k, d := range dirs {
			if want, _ := splitIndex(s, "/", 3+k); d != want {
				t.Fatalf("urlDirs(%q)[%d] = %q, want %q", s, k, d, want)
			}
		}
	}
}

func BenchmarkRefQ22(b *testing.B) { benchStatelessRef(b, "q22") }

package nexmark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/connectors/nexmark"
)

func TestBidTimeType(t *testing.T) {
	want := map[int]string{7: "otherTime", 19: "otherTime"}
	for h := 0; h < 24; h++ {
		if h >= 8 && h <= 18 {
			want[h] = "dayTime"
		} else if h <= 6 || h >= 20 {
			want[h] = "nightTime"
		}
	}
	for _, day := range []time.Time{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)} {
		for h := 0; h < 24; h++ {
			for _, off := range []time.Duration{0, 59*time.Minute + 59999*time.Millisecond} {
				ms := day.Add(time.Duration(h)*time.Hour + off).UnixMilli()
				if got := hourUTC(ms); got != int64(h) {
					t.Errorf("HOUR(%d) = %d, want %d", ms, got, h)
				}
				if got := bidTimeType(ms); got != want[h] {
					t.Errorf("hour %d (%d): %s, want %s", h, ms, got, want[h])
				}
			}
		}
	}
}

func TestCountChar(t *testing.T) {
	for _, c := range []struct {
		s, chr string
		want   int64
	}{
		{"", "c", 0}, {"c", "c", 1}, {"abc", "c", 1}, {"cccc", "c", 4}, {"CcC", "c", 1},
		{"ç", "c", 0}, // U+00E7 is C3 A7: no byte 0x63
		{"accent", "cx", 2}, {"a\xe7c", "\xe7", 1},
	} {
		if got := countChar(c.s, c.chr); got != c.want {
			t.Errorf("count_char(%q, %q) = %d, want %d", c.s, c.chr, got, c.want)
		}
	}
}

func TestQ14PriceRange(t *testing.T) {
	// 0.908·1101321 = 999999.468, 0.908·1101322 = 1000000.376,
	// 0.908·55066079 = 49999999.732, 0.908·55066080 = 50000000.640.
	for price, keep := range map[int64]bool{0: false, 1101321: false, 1101322: true, 55066079: true, 55066080: false, -2000000: false, 1 << 62: false} {
		b := nexmark.Bid{Price: price, Extra: "cc"}
		r, ok := q14Of(&b)
		if ok != keep {
			t.Errorf("price %d: kept %v, want %v", price, ok, keep)
		}
		if ok && (r.CCounts != 2 || r.Price != euros(price)) {
			t.Errorf("price %d: row %+v", price, r)
		}
	}
}

func BenchmarkRefQ14(b *testing.B) { benchStatelessRef(b, "q14") }

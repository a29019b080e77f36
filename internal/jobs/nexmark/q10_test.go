package nexmark

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestDateFormatMatchesTimeFormat(t *testing.T) {
	check := func(ms int64) {
		t.Helper()
		dt, hm := dateFormat(ms)
		tm := time.UnixMilli(ms).UTC()
		if got, want := dt.String(), tm.Format("2006-01-02"); got != want {
			t.Fatalf("DATE_FORMAT(%d, 'yyyy-MM-dd') = %s, want %s", ms, got, want)
		}
		if got, want := string(minuteText[hm][:]), tm.Format("15:04"); got != want {
			t.Fatalf("DATE_FORMAT(%d, 'HH:mm') = %s, want %s", ms, got, want)
		}
	}
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	for _, ms := range []int64{0, -1, 1, msPerDay - 1, msPerDay, -msPerDay, -msPerDay - 1, lo, hi} {
		check(ms)
	}
	// Every day boundary around leap days and century years.
	for _, y := range []int{1600, 1700, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 2400} {
		for d := time.Date(y, 2, 27, 0, 0, 0, 0, time.UTC); d.Month() < 4; d = d.AddDate(0, 0, 1) {
			ms := d.UnixMilli()
			check(ms - 1)
			check(ms)
			check(ms + msPerMinute - 1)
			check(ms + msPerMinute)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20_000 {
		check(lo + rng.Int64N(hi-lo+1))
	}
}

func TestDateFormatYearsOutsideFourDigits(t *testing.T) {
	for _, c := range []struct {
		ms     int64
		dt, hm string
	}{
		// Year 0 is 1 BCE, year -1 2 BCE: 'yyyy' is the year of the era.
		{time.Date(0, 3, 1, 10, 5, 0, 0, time.UTC).UnixMilli(), "0001-03-01", "10:05"},
		{time.Date(-1, 12, 31, 23, 59, 0, 0, time.UTC).UnixMilli(), "0002-12-31", "23:59"},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), "+10000-01-01", "00:00"},
		// java.time.Instant.ofEpochMilli(Long.MAX_VALUE) is +292278994-08-17T07:12:55.807Z,
		// ofEpochMilli(Long.MIN_VALUE) is -292275055-05-16T16:47:04.192Z.
		{math.MaxInt64, "+292278994-08-17", "07:12"},
		{math.MinInt64, "+292275056-05-16", "16:47"},
	} {
		dt, hm := dateFormat(c.ms)
		if dt.String() != c.dt || string(minuteText[hm][:]) != c.hm {
			t.Errorf("DATE_FORMAT(%d) = %s %s, want %s %s", c.ms, dt, minuteText[hm][:], c.dt, c.hm)
		}
	}
}

func BenchmarkRefQ10(b *testing.B) { benchStatelessRef(b, "q10") }

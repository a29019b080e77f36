package codec

import (
	"testing"
	"time"
)

// BenchmarkStructDecodeInto: the decode side of BenchmarkStructAppendFrom,
// the records of a channel's batch, decoded in place.
func BenchmarkStructDecodeInto(b *testing.B) {
	c, err := For[benchEvent]()
	if err != nil {
		b.Fatal(err)
	}
	pc := c.(PointerCodec[benchEvent])
	var buf []byte
	for i := range 1024 {
		rec := benchEvent{Created: int64(i) << 30}
		rec.Event.I, rec.Event.Account, rec.Event.Amount = int64(i)*1000, int64(i%1000), int64(i%97)
		buf = pc.AppendFrom(buf, &rec)
	}
	for b.Loop() {
		for src := buf; len(src) > 0; {
			var v benchEvent
			n, err := pc.DecodeInto(src, &v)
			if err != nil {
				b.Fatal(err)
			}
			src = src[n:]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/record")
}

// BenchmarkOrderRoundTrip: a state value with strings, slices, a map, a
// pointer, a time and a marshaler: the per-field plans, both ways.
func BenchmarkOrderRoundTrip(b *testing.B) {
	c, err := For[Order]()
	if err != nil {
		b.Fatal(err)
	}
	pc := c.(PointerCodec[Order])
	o := Order{
		ID: 7, Name: "order-7", Paid: true, Amounts: []int32{1, -2, 3}, Meta: map[string]uint16{"x": 1, "y": 2},
		Inner: Inner{Tags: []Label{"t1"}, Score: 0.5}, Next: &Order{ID: 8},
		At: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Raw: []byte("raw"), Fixed: [3]int8{-1, 0, 1},
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = pc.AppendFrom(buf[:0], &o)
		var v Order
		if _, err := pc.DecodeInto(buf, &v); err != nil {
			b.Fatal(err)
		}
	}
}

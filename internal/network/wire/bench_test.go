package wire

import (
	"testing"
)

// BenchmarkData32KiB measures framing one Data frame of 32 KiB of records,
// the segment size: appending it to a write buffer, and reading and
// decoding it back through a Reader. Both must report 0 allocs/op.
func BenchmarkData32KiB(b *testing.B) {
	records := make([]byte, 32<<10)
	b.Run("encode", func(b *testing.B) {
		dst := make([]byte, 0, 64<<10)
		b.SetBytes(int64(len(records)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			dst = AppendData(dst[:0], 7, uint64(i), DataMsg{Backlog: 3, Records: 1024, Bytes: records})
		}
	})
	b.Run("decode", func(b *testing.B) {
		var frames []byte
		for i := 0; i < 3; i++ { // three frames: reads straddle frame boundaries
			frames = AppendData(frames, 7, uint64(i), DataMsg{Backlog: 3, Records: 1024, Bytes: records})
		}
		rd := NewReader(&cycle{b: frames}, 0)
		b.SetBytes(int64(len(records)))
		b.ReportAllocs()
		for b.Loop() {
			f, err := rd.Next()
			if err != nil {
				b.Fatal(err)
			}
			d, err := DecodeData(f.Payload)
			if err != nil || d.Records != 1024 {
				b.Fatal(err)
			}
		}
	})
}

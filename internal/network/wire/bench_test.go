package wire

import (
	"io"
	"testing"
)

// BenchmarkData32KiB measures framing one Data frame of 32 KiB of records,
// the segment size: appending it to a write buffer, and reading and
// decoding it back through a Reader. Both must report 0 allocs/op. The
// baselines do the copies any framing must do (append the records; read
// them from the stream), so the ratio is the cost of the framing itself.
func BenchmarkData32KiB(b *testing.B) {
	records := make([]byte, 32<<10)
	b.Run("baseline-append", func(b *testing.B) {
		dst := make([]byte, 0, 64<<10)
		b.SetBytes(int64(len(records)))
		b.ReportAllocs()
		for b.Loop() {
			dst = append(dst[:0], records...)
		}
	})
	b.Run("baseline-read", func(b *testing.B) {
		src := &cycle{b: make([]byte, 3*len(records))}
		dst := make([]byte, len(records))
		b.SetBytes(int64(len(records)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := io.ReadFull(src, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
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
			d, err := DecodeData(f.Flags, f.Payload)
			if err != nil || d.Records != 1024 {
				b.Fatal(err)
			}
		}
	})
}

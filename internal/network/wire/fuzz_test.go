package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/network"
)

// FuzzDecodeFrame feeds arbitrary bytes to DecodeFrame and the kind's
// payload decoder. Nothing may panic; every error must be ErrMalformed (or
// ErrVersion from a Hello); an accepted frame must re-encode through the
// appenders to exactly its bytes; and a Reader over the same bytes, fed one
// byte at a time, must agree with DecodeFrame.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range samples() {
		f.Add(s.frame)
	}
	f.Add(header(MaxLength, Data, 0, 1, 0))
	f.Add(append(header(16, AddCredit, 0, 1, 0), 0x81, 0x00))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := DecodeFrame(b)
		rd := NewReader(iotest.OneByteReader(bytes.NewReader(b)), 32)
		rf, rerr := rd.Next()
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeFrame error %v is not ErrMalformed", err)
			}
			truncated := defectOf(err) == DefectTruncated
			if rerr == nil || (truncated != (errors.Is(rerr, io.ErrUnexpectedEOF) || rerr == io.EOF)) {
				t.Fatalf("DecodeFrame: %v, Reader: %v", err, rerr)
			}
			return
		}
		if rerr != nil || rf.Header != fr.Header || !bytes.Equal(rf.Payload, fr.Payload) {
			t.Fatalf("Reader read %+v, %v; DecodeFrame %+v", rf, rerr, fr)
		}
		if raw := AppendFrame(nil, fr.Header, fr.Payload); !bytes.Equal(raw, b[:n]) {
			t.Fatalf("AppendFrame re-encoded\n%x\nwant\n%x", raw, b[:n])
		}
		re, _, err := reencode(fr)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("payload error %v is neither ErrMalformed nor ErrVersion", err)
			}
			return
		}
		if !bytes.Equal(re, b[:n]) {
			t.Fatalf("accepted %s frame re-encoded\n%x\nwant\n%x", fr.Kind, re, b[:n])
		}
	})
}

// FuzzEventPayload feeds arbitrary bytes to DecodeEvent, as the payload of
// a frame without and with FlagLogPos: an accepted payload re-encodes to
// the same bytes with the same flags and carries an event kind.
func FuzzEventPayload(f *testing.F) {
	for _, s := range samples() {
		if fr, _, _ := DecodeFrame(s.frame); fr.Kind == Event {
			f.Add(fr.Payload)
		}
	}
	f.Add([]byte{1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, flags := range []uint8{0, FlagLogPos} {
			m, err := DecodeEvent(flags, b)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("flags %#02x: error %v is not ErrMalformed", flags, err)
				}
				continue
			}
			if !m.Kind.IsEvent() || m.Kind > network.WatermarkStatus {
				t.Fatalf("flags %#02x: decoded kind %s", flags, m.Kind)
			}
			if re := m.Append(nil); !bytes.Equal(re, b) || m.Flags() != flags {
				t.Fatalf("flags %#02x: accepted event re-encoded with flags %#02x\n%x\nwant\n%x", flags, m.Flags(), re, b)
			}
		}
	})
}

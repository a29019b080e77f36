package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
)

// TestRoundTrip decodes every sample kind and re-encodes it to the same
// bytes, and checks the decoded message against its expected description.
func TestRoundTrip(t *testing.T) {
	want := map[string]string{
		"hello":                        "{Version:1 From:tm-1 To:tm-2 BuildID:b3f1}",
		"hello-ok":                     "{Version:1 From:tm-2 To:tm-1 BuildID:}",
		"partition-request":            "{Job:demo Producer:{Vertex:2 Subtask:3} Attempt:1 Edge:0 Consumer:300 Credit:4 BufferSize:32768 Weak:false From:{Buffers:0 Records:0} Held:0}",
		"partition-request-weak":       "{Job:demo Producer:{Vertex:1 Subtask:0} Attempt:4 Edge:1 Consumer:2 Credit:2 BufferSize:1024 Weak:true From:{Buffers:300 Records:1099511627776} Held:0}",
		"partition-request-weak-fresh": "{Job:demo Producer:{Vertex:0 Subtask:0} Attempt:0 Edge:0 Consumer:0 Credit:2 BufferSize:1024 Weak:true From:{Buffers:0 Records:0} Held:0}",
		"partition-request-weak-held":  "{Job:demo Producer:{Vertex:0 Subtask:0} Attempt:0 Edge:0 Consumer:0 Credit:4 BufferSize:1024 Weak:true From:{Buffers:9 Records:70} Held:3}",
		"data-positioned":              `@5/130 backlog=1 records=2 bytes="\x02ab\x01c"`,
		"data-positioned-records-0":    `@1/0 backlog=0 records=1 bytes="\x00"`,
		"watermark-positioned":         "@6/130 watermark ts=42",
		"eop-positioned":               "@9223372036854775808/18446744073709551615 eop",
		"priority-barrier-positioned":  "@7/131 priority seq=2 barrier id=12 ts=1700000000123456789 kind=periodic",
		"release":                      "{Buffers:6 Records:130}",
		"release-zero":                 "{Buffers:0 Records:0}",
		"data":                         `backlog=3 records=2 bytes="\x02ab\x01c"`,
		"data-empty-records":           `backlog=0 records=5 bytes=""`,
		"barrier":                      "barrier id=9 ts=1700000000123456789 kind=final",
		"barrier-zero-time":            "barrier id=1 ts=0 kind=savepoint",
		"cancel-barrier":               "cancel id=9",
		"priority-barrier":             "priority seq=1099511627776 barrier id=10 ts=1700000000123456789 kind=periodic",
		"priority-cancel":              "priority seq=3 cancel id=10",
		"priority-announcement":        "priority seq=40 announce id=11 ts=1700000000123456789 kind=periodic",
		"prioritize":                   "checkpoint=12",
		"end-of-data":                  "eod",
		"watermark":                    "watermark ts=1700000000123",
		"watermark-min":                "watermark ts=-9223372036854775808",
		"watermark-negative":           "watermark ts=-5",
		"watermark-idle":               "wm-status idle=true",
		"watermark-active":             "wm-status idle=false",
		"end-of-partition":             "eop",
		"add-credit":                   "credit=300",
		"cancel-partition":             "",
		"error-fatal":                  `"frame 12, expected 11: frames lost or reordered"`,
		"error-channel":                `""`,
	}
	for _, s := range samples() {
		f, n, err := DecodeFrame(s.frame)
		if err != nil || n != len(s.frame) {
			t.Fatalf("%s: DecodeFrame = %d, %v; want %d bytes", s.name, n, err, len(s.frame))
		}
		b, desc, err := reencode(f)
		if err != nil {
			t.Fatalf("%s: decode payload: %v", s.name, err)
		}
		if !bytes.Equal(b, s.frame) {
			t.Fatalf("%s: re-encoded\n%x\nwant\n%x", s.name, b, s.frame)
		}
		if desc != want[s.name] {
			t.Fatalf("%s: decoded %s, want %s", s.name, desc, want[s.name])
		}
		if raw := AppendFrame(nil, f.Header, f.Payload); !bytes.Equal(raw, s.frame) {
			t.Fatalf("%s: AppendFrame of the decoded header and payload differs", s.name)
		}
	}
}

// TestHeaderLayout pins the byte layout of the header against the design.
func TestHeaderLayout(t *testing.T) {
	b := AppendData(nil, 0x01020304, 0x05060708090a0b0c, DataMsg{Backlog: 1, Records: 1, Bytes: []byte{0xee}})
	want := []byte{0, 0, 0, 17, byte(Data), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 1, 0xee}
	if !bytes.Equal(b, want) {
		t.Fatalf("data frame\n%x\nwant\n%x", b, want)
	}
	// The header alone, records written after it, gives the same bytes.
	h := AppendDataHeader(nil, 0x01020304, 0x05060708090a0b0c, LogPos{}, 1, 1, 1)
	if !bytes.Equal(append(h, 0xee), want) {
		t.Fatalf("AppendDataHeader + records\n%x\nwant\n%x", append(h, 0xee), want)
	}

	// A log position sets the flag and leads the payload: uvarints 2 and
	// 300, then backlog and record count.
	pos := LogPos{Buffers: 2, Records: 300}
	b = AppendData(nil, 1, 0, DataMsg{Pos: pos, Backlog: 1, Records: 1, Bytes: []byte{0xee}})
	want = []byte{0, 0, 0, 20, byte(Data), FlagLogPos, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xac, 0x02, 1, 1, 0xee}
	if !bytes.Equal(b, want) {
		t.Fatalf("positioned data frame\n%x\nwant\n%x", b, want)
	}
	if h := AppendDataHeader(nil, 1, 0, pos, 1, 1, 1); !bytes.Equal(append(h, 0xee), want) {
		t.Fatalf("positioned AppendDataHeader + records\n%x\nwant\n%x", append(h, 0xee), want)
	}
	// An event's position leads its payload the same way.
	b = AppendEvent(nil, 1, 3, EventMsg{Kind: network.EndOfPartition, Pos: pos})
	want = []byte{0, 0, 0, 18, byte(Event), FlagLogPos, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 2, 0xac, 0x02, codeEndOfPartition}
	if !bytes.Equal(b, want) {
		t.Fatalf("positioned event frame\n%x\nwant\n%x", b, want)
	}
	// Release: kind 10, the position's two uvarints.
	b = AppendRelease(nil, 1, pos)
	want = []byte{0, 0, 0, 17, 10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xac, 0x02}
	if !bytes.Equal(b, want) || Release.String() != "release" {
		t.Fatalf("release frame %s\n%x\nwant\n%x", Release, b, want)
	}
}

// TestTruncation: every proper prefix of every sample frame is refused as
// truncated by DecodeFrame, and every proper prefix of a payload with a
// fixed structure is refused by its decoder.
func TestTruncation(t *testing.T) {
	for _, s := range samples() {
		for i := 0; i < len(s.frame); i++ {
			_, _, err := DecodeFrame(s.frame[:i])
			if defectOf(err) != DefectTruncated {
				t.Fatalf("%s: prefix of %d of %d bytes: %v, want truncated", s.name, i, len(s.frame), err)
			}
		}
		f, _, _ := DecodeFrame(s.frame)
		if f.Kind == Data || f.Kind == Error || len(f.Payload) == 0 {
			continue // records or a message are free-form: any prefix is a payload
		}
		for i := 0; i < len(f.Payload); i++ {
			f2 := f
			f2.Payload = f.Payload[:i]
			if _, _, err := reencode(f2); defectOf(err) != DefectTruncated && defectOf(err) != DefectValue {
				t.Fatalf("%s: payload prefix of %d of %d bytes: %v, want truncated", s.name, i, len(f.Payload), err)
			}
		}
	}
	// Data: a prefix that ends inside the backlog or record count.
	for _, p := range [][]byte{{}, {0x80}, {3}, {3, 0x81}} {
		if _, err := DecodeData(0, p); defectOf(err) != DefectTruncated {
			t.Fatalf("DecodeData(%x) = %v, want truncated", p, err)
		}
	}
	// Positioned data: a prefix that ends inside the position or the
	// counts after it.
	for _, p := range [][]byte{{}, {0x85}, {5}, {5, 0x80}, {5, 1}, {5, 1, 0}, {5, 1, 0, 0x81}} {
		if _, err := DecodeData(FlagLogPos, p); defectOf(err) != DefectTruncated {
			t.Fatalf("DecodeData(FlagLogPos, %x) = %v, want truncated", p, err)
		}
	}
}

// TestTrailingBytes: one byte past a fixed payload is refused.
func TestTrailingBytes(t *testing.T) {
	for _, s := range samples() {
		f, _, _ := DecodeFrame(s.frame)
		if f.Kind == Data || f.Kind == Error {
			continue
		}
		f.Payload = append(append([]byte(nil), f.Payload...), 0)
		_, _, err := reencode(f)
		if defectOf(err) != DefectTrailing {
			t.Fatalf("%s + 1 byte: %v, want trailing bytes", s.name, err)
		}
	}
}

// header builds raw header bytes without the checks of AppendHeader.
func header(length uint32, kind Kind, flags uint8, channel uint32, seq uint64) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	b = append(b, byte(kind), flags)
	b = binary.BigEndian.AppendUint32(b, channel)
	return binary.BigEndian.AppendUint64(b, seq)
}

func TestMalformedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      []byte
		defect Defect
		msg    string
	}{
		{"length 0", header(0, Data, 0, 1, 0), DefectLength, "malformed frame: length out of range: length 0, want 14 to 67108864"},
		{"length 13", header(13, Data, 0, 1, 0), DefectLength, "length 13, want 14"},
		{"length 64 MiB + 1", header(MaxLength+1, Data, 0, 1, 0), DefectLength, "length 67108865"},
		{"length max u32", header(0xffffffff, Data, 0, 1, 0), DefectLength, "length 4294967295"},
		{"kind 0", header(14, 0, 0, 1, 0), DefectKind, "malformed frame: unknown kind: kind byte 0"},
		{"kind 11", header(14, 11, 0, 1, 0), DefectKind, "kind byte 11"},
		{"release on channel 0", header(16, Release, 0, 0, 0), DefectChannel, "malformed release frame: channel not allowed for kind: channel 0"},
		{"release with seq", header(16, Release, 0, 1, 4), DefectSeq, "malformed release frame: sequence number not allowed for kind: sequence 4"},
		{"log-position flag on release", header(16, Release, FlagLogPos, 1, 0), DefectFlags, "malformed release frame: nonzero flags: flags 0x01 on channel 1, want 0 in version 1"},
		{"log-position flag on add-credit", header(15, AddCredit, FlagLogPos, 1, 0), DefectFlags, "flags 0x01 on channel 1, want 0"},
		{"log-position flag on request", header(30, PartitionRequest, FlagLogPos, 1, 0), DefectFlags, "malformed partition-request frame: nonzero flags"},
		{"log-position flag on error", header(14, Error, FlagLogPos, 0, 0), DefectFlags, "malformed error frame: nonzero flags"},
		{"log-position flag on hello", header(30, Hello, FlagLogPos, 0, 0), DefectFlags, "malformed hello frame: nonzero flags"},
		{"flag 0x02 on data", header(17, Data, 0x02, 1, 0), DefectFlags, "malformed data frame: nonzero flags: flags 0x02 on channel 1, want 0 or 0x01 (log position) in version 1"},
		{"flags 0x03 on event", header(17, Event, 0x03, 1, 0), DefectFlags, "malformed event frame: nonzero flags: flags 0x03 on channel 1, want 0 or 0x01"},
		{"flags 0x80 on data", header(17, Data, 0x80, 1, 0), DefectFlags, "flags 0x80"},
		{"positioned data on channel 0", header(17, Data, FlagLogPos, 0, 0), DefectChannel, "channel 0"},
		{"prioritize on channel 0", header(22, Prioritize, 0, 0, 0), DefectChannel, "channel 0"},
		{"prioritize with seq", header(22, Prioritize, 0, 1, 3), DefectSeq, "sequence 3"},
		{"kind 255", header(14, 255, 0, 1, 0), DefectKind, "kind byte 255"},
		{"flags", header(14, CancelPartition, 1, 1, 0), DefectFlags, "malformed cancel-partition frame: nonzero flags: flags 0x01 on channel 1, want 0 in version 1"},
		{"hello on a channel", header(14, Hello, 0, 3, 0), DefectChannel, "malformed hello frame: channel not allowed for kind: channel 3, want 0"},
		{"hello-ok on a channel", header(14, HelloOK, 0, 1, 0), DefectChannel, "channel 1, want 0"},
		{"data on channel 0", header(15, Data, 0, 0, 0), DefectChannel, "malformed data frame: channel not allowed for kind: channel 0 is the connection's"},
		{"event on channel 0", header(15, Event, 0, 0, 0), DefectChannel, "channel 0"},
		{"request on channel 0", header(15, PartitionRequest, 0, 0, 0), DefectChannel, "channel 0"},
		{"credit on channel 0", header(15, AddCredit, 0, 0, 0), DefectChannel, "channel 0"},
		{"cancel on channel 0", header(14, CancelPartition, 0, 0, 0), DefectChannel, "channel 0"},
		{"add-credit with seq", header(15, AddCredit, 0, 2, 5), DefectSeq, "malformed add-credit frame: sequence number not allowed for kind: sequence 5 on channel 2, want 0"},
		{"error with seq", header(14, Error, 0, 0, 1), DefectSeq, "sequence 1"},
		{"hello with seq", header(14, Hello, 0, 0, 1), DefectSeq, "sequence 1"},
		{"short length", []byte{0, 0, 0}, DefectTruncated, "3 bytes, a frame starts with a 4-byte length"},
		{"short header", header(14, Data, 0, 1, 0)[:17], DefectTruncated, "17 bytes, the header has 18"},
		{"short payload", append(header(20, Data, 0, 1, 0), 1, 1), DefectTruncated, "malformed data frame: truncated: 20 of 24 bytes on channel 1"},
	} {
		_, _, err := DecodeFrame(tc.b)
		if !errors.Is(err, ErrMalformed) || defectOf(err) != tc.defect || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %s containing %q", tc.name, err, tc.defect, tc.msg)
		}
		// The Reader refuses the same header, and goes on refusing.
		rd := NewReader(bytes.NewReader(append(tc.b, make([]byte, 64)...)), 0)
		if tc.defect == DefectTruncated {
			rd = NewReader(bytes.NewReader(tc.b), 0)
		}
		_, err1 := rd.Next()
		_, err2 := rd.Next()
		if err1 == nil || err2 != err1 {
			t.Errorf("%s: Reader.Next = %v then %v, want one sticky error", tc.name, err1, err2)
		}
		if tc.defect != DefectTruncated && defectOf(err1) != tc.defect {
			t.Errorf("%s: Reader.Next = %v, want %s", tc.name, err1, tc.defect)
		}
	}
}

func TestMalformedPayloads(t *testing.T) {
	ok := AppendHello(nil, Hello, HelloMsg{From: "a", To: "b"})[HeaderSize:]
	badMagic := append([]byte("WEIRNOT\x00"), ok[8:]...)
	for _, tc := range []struct {
		name   string
		decode func() error
		defect Defect
		msg    string
	}{
		{"bad magic", func() error { _, err := DecodeHello(Hello, badMagic); return err }, DefectValue,
			`malformed hello frame: bad value: magic "WEIRNOT\x00", want "WEIRNET\x00": the peer is not a weir data port`},
		{"http", func() error { _, err := DecodeHello(Hello, []byte("GET / HTTP/1.1\r\n")); return err }, DefectValue, "not a weir data port"},
		{"empty sender", func() error {
			_, err := DecodeHello(HelloOK, HelloMsg{Version: 1, To: "b"}.Append(nil))
			return err
		}, DefectValue, "malformed hello-ok frame: bad value: sender ResourceID of 0 bytes, want 1 to 4096"},
		{"zero credit", func() error { _, err := DecodeAddCredit([]byte{0}); return err }, DefectValue,
			"malformed add-credit frame: bad value: credit 0, want 1 to 2147483647"},
		{"huge credit", func() error { _, err := DecodeAddCredit([]byte{0x80, 0x80, 0x80, 0x80, 0x08}); return err }, DefectValue, "credit 2147483648"},
		{"overlong credit", func() error { _, err := DecodeAddCredit([]byte{0x81, 0x00}); return err }, DefectValue, "credit: overlong varint encoding"},
		{"varint overflow", func() error {
			_, err := DecodeAddCredit(bytes.Repeat([]byte{0xff}, 11))
			return err
		}, DefectValue, "overflows 64 bits"},
		{"zero records", func() error { _, err := DecodeData(0, []byte{0, 0, 1}); return err }, DefectValue,
			"malformed data frame: bad value: record count 0, want 1"},
		{"unknown event", func() error { _, err := DecodeEvent(0, []byte{10}); return err }, DefectValue,
			"malformed event frame: bad value: event code 10, want 1 to 9"},
		{"watermark short", func() error { _, err := DecodeEvent(0, []byte{8, 0, 0, 0, 0, 0, 0, 1}); return err }, DefectTruncated,
			"watermark timestamp"},
		{"watermark with bytes", func() error { _, err := DecodeEvent(0, []byte{8, 0, 0, 0, 0, 0, 0, 0, 1, 0}); return err }, DefectTrailing,
			"malformed event frame: trailing bytes: 1 bytes after the watermark event"},
		{"watermark status missing", func() error { _, err := DecodeEvent(0, []byte{9}); return err }, DefectTruncated, "watermark status"},
		{"watermark status 2", func() error { _, err := DecodeEvent(0, []byte{9, 2}); return err }, DefectValue,
			"malformed event frame: bad value: watermark status 2, want 0 (active) or 1 (idle)"},
		{"watermark status with bytes", func() error { _, err := DecodeEvent(0, []byte{9, 1, 0}); return err }, DefectTrailing,
			"trailing bytes: 1 bytes after the wm-status event"},
		{"priority watermark code", func() error { _, err := DecodeEvent(0, []byte{8 + 4, 0}); return err }, DefectValue, "event code 12"},
		{"announcement without seq", func() error {
			_, err := DecodeEvent(0, AppendEvent(nil, 1, 0, EventMsg{Kind: network.Announcement, Priority: true})[HeaderSize:HeaderSize+18])
			return err
		}, DefectTruncated, "priority event seq"},
		{"prioritize checkpoint 0", func() error { _, err := DecodePrioritize(make([]byte, 8)); return err }, DefectValue,
			"malformed prioritize frame: bad value: checkpoint id 0, want at least 1"},
		{"prioritize short", func() error { _, err := DecodePrioritize([]byte{0, 1}); return err }, DefectTruncated, "checkpoint id"},
		{"prioritize with bytes", func() error { _, err := DecodePrioritize([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0}); return err }, DefectTrailing,
			"malformed prioritize frame: trailing bytes: 1 bytes after the checkpoint id"},
		{"priority barrier without seq", func() error {
			_, err := DecodeEvent(0, AppendEvent(nil, 1, 0, EventMsg{Kind: network.Barrier, Priority: true})[HeaderSize:HeaderSize+18])
			return err
		}, DefectTruncated, "priority event seq"},
		{"event code 0", func() error { _, err := DecodeEvent(0, []byte{0}); return err }, DefectValue, "event code 0"},
		{"empty event", func() error { _, err := DecodeEvent(0, nil); return err }, DefectTruncated, "event code: payload ends before it"},
		{"checkpoint kind", func() error {
			_, err := DecodeEvent(0, []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3})
			return err
		}, DefectValue, "checkpoint kind 3, want 0 to 2"},
		{"negative barrier id", func() error {
			_, err := DecodeEvent(0, []byte{1, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
			return err
		}, DefectValue, "barrier id 9223372036854775808 out of range"},
		{"eop with bytes", func() error { _, err := DecodeEvent(0, []byte{3, 0}); return err }, DefectTrailing,
			"malformed event frame: trailing bytes: 1 bytes after the eop event"},
		{"cancel partition with bytes", func() error { return DecodeCancelPartition([]byte{1, 2}) }, DefectTrailing,
			"malformed cancel-partition frame: trailing bytes: 2 bytes after the header"},
		{"request zero credit", func() error {
			_, err := DecodePartitionRequest(PartitionRequestMsg{Job: "j", Credit: 0, BufferSize: 1}.Append(nil))
			return err
		}, DefectValue, "initial credit 0, want 1"},
		{"data flag with zero position", func() error { _, err := DecodeData(FlagLogPos, []byte{0, 0, 0, 1, 7}); return err }, DefectValue,
			"malformed data frame: bad value: log position 0/0 with the log-position flag: a zero position travels without it"},
		{"data flag without position", func() error { _, err := DecodeData(FlagLogPos, nil); return err }, DefectTruncated,
			"malformed data frame: truncated: log position buffers: payload ends inside the varint"},
		{"data flag with half a position", func() error { _, err := DecodeData(FlagLogPos, []byte{5}); return err }, DefectTruncated,
			"log position records: payload ends inside the varint"},
		{"data overlong position", func() error { _, err := DecodeData(FlagLogPos, []byte{0x85, 0, 1, 0, 1}); return err }, DefectValue,
			"log position buffers: overlong varint encoding"},
		{"data position overflow", func() error {
			_, err := DecodeData(FlagLogPos, append(bytes.Repeat([]byte{0xff}, 10), 1, 0, 1))
			return err
		}, DefectValue, "log position buffers: varint overflows 64 bits"},
		{"data position, then no counts", func() error { _, err := DecodeData(FlagLogPos, []byte{5, 1}); return err }, DefectTruncated, "backlog"},
		{"event flag with zero position", func() error { _, err := DecodeEvent(FlagLogPos, []byte{0, 0, 3}); return err }, DefectValue,
			"malformed event frame: bad value: log position 0/0"},
		{"event flag with half a position", func() error { _, err := DecodeEvent(FlagLogPos, []byte{5}); return err }, DefectTruncated,
			"malformed event frame: truncated: log position records"},
		{"event position, then no event", func() error { _, err := DecodeEvent(FlagLogPos, []byte{5, 1}); return err }, DefectTruncated,
			"event code: payload ends before it"},
		{"positioned event with bytes", func() error { _, err := DecodeEvent(FlagLogPos, []byte{5, 1, 3, 0}); return err }, DefectTrailing,
			"1 bytes after the eop event"},
		{"release empty", func() error { _, err := DecodeRelease(nil); return err }, DefectTruncated,
			"malformed release frame: truncated: released buffers: payload ends inside the varint"},
		{"release half", func() error { _, err := DecodeRelease([]byte{5}); return err }, DefectTruncated, "released records"},
		{"release overlong", func() error { _, err := DecodeRelease([]byte{5, 0x80, 0}); return err }, DefectValue,
			"malformed release frame: bad value: released records: overlong varint encoding"},
		{"release with bytes", func() error { _, err := DecodeRelease([]byte{5, 1, 0}); return err }, DefectTrailing,
			"malformed release frame: trailing bytes: 1 bytes after the released position"},
		{"request weak 2", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1}.Append(nil)
			b[len(b)-4] = 2
			_, err := DecodePartitionRequest(b)
			return err
		}, DefectValue, "malformed partition-request frame: bad value: weak 2, want 0 or 1"},
		{"request without weak fields", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1}.Append(nil)
			_, err := DecodePartitionRequest(b[:len(b)-4])
			return err
		}, DefectTruncated, "weak: payload ends inside the varint"},
		{"request with half a position", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1, Weak: true, From: LogPos{Buffers: 1, Records: 1}}.Append(nil)
			_, err := DecodePartitionRequest(b[:len(b)-2])
			return err
		}, DefectTruncated, "replay from records"},
		{"request without held credit", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1, Weak: true}.Append(nil)
			_, err := DecodePartitionRequest(b[:len(b)-1])
			return err
		}, DefectTruncated, "held credit: payload ends inside the varint"},
		{"request held all its credit", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 2, BufferSize: 1, Weak: true, Held: 1}.Append(nil)
			b[len(b)-1] = 2
			_, err := DecodePartitionRequest(b)
			return err
		}, DefectValue, "held credit 2 of 2"},
		{"request held without weak", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 2, BufferSize: 1, Weak: true, Held: 1}.Append(nil)
			b[len(b)-4] = 0
			_, err := DecodePartitionRequest(b)
			return err
		}, DefectValue, "0 unless weak"},
		{"request position without weak", func() error {
			b := PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1, Weak: true, From: LogPos{Buffers: 3, Records: 9}}.Append(nil)
			b[len(b)-4] = 0
			_, err := DecodePartitionRequest(b)
			return err
		}, DefectValue, "replay position 3/9 on a request that is not weak"},
		{"request empty job", func() error {
			_, err := DecodePartitionRequest(PartitionRequestMsg{Credit: 1, BufferSize: 1}.Append(nil))
			return err
		}, DefectValue, "job of 0 bytes"},
	} {
		err := tc.decode()
		if !errors.Is(err, ErrMalformed) || defectOf(err) != tc.defect || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %s containing %q", tc.name, err, tc.defect, tc.msg)
		}
	}
}

func TestHelloVersionMismatch(t *testing.T) {
	b := HelloMsg{Version: 2, From: "tm-9", To: "tm-1"}.Append(nil)
	m, err := DecodeHello(Hello, b)
	var ve *VersionError
	if !errors.As(err, &ve) || errors.Is(err, ErrMalformed) || !errors.Is(err, ErrVersion) {
		t.Fatalf("DecodeHello of version 2 = %v, want a VersionError", err)
	}
	if m.Version != 2 || ve.Peer != 2 || ve.Local != Version {
		t.Fatalf("version %d, error %+v", m.Version, ve)
	}
	want := "peer speaks weir network protocol 2, this process 1: run the same weir build in every role"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	// A version-2 Hello may have any layout after the version.
	if _, err := DecodeHello(Hello, append([]byte(Magic), 0, 2)); !errors.Is(err, ErrVersion) {
		t.Fatalf("short version-2 hello: %v, want ErrVersion", err)
	}
}

func TestAppendPanicsOnProgrammingErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"data on channel 0":  func() { AppendData(nil, 0, 0, DataMsg{Records: 1}) },
		"data of 0 records":  func() { AppendData(nil, 1, 0, DataMsg{}) },
		"zero credit":        func() { AppendAddCredit(nil, 1, 0) },
		"hello with kind":    func() { AppendHello(nil, Data, HelloMsg{}) },
		"event of data":      func() { AppendEvent(nil, 1, 0, EventMsg{}) },
		"priority eop":       func() { AppendEvent(nil, 1, 0, EventMsg{Kind: network.EndOfPartition, Priority: true}) },
		"plain announcement": func() { AppendEvent(nil, 1, 0, EventMsg{Kind: network.Announcement}) },
		"priority watermark": func() { AppendEvent(nil, 1, 0, EventMsg{Kind: network.Watermark, Priority: true}) },
		"priority wm status": func() { AppendEvent(nil, 1, 0, EventMsg{Kind: network.WatermarkStatus, Priority: true}) },
		"prioritize 0":       func() { AppendPrioritize(nil, 1, 0) },
		"seq on add-credit":  func() { AppendHeader(nil, Header{Kind: AddCredit, Channel: 1, Seq: 1}, 1) },
		"payload too large":  func() { AppendHeader(nil, Header{Kind: Data, Channel: 1}, MaxPayload+1) },
		"negative barrier":   func() { AppendEvent(nil, 1, 0, EventMsg{Kind: network.Barrier, Barrier: checkpoint.Barrier{ID: -1}}) },
		"hello on channel 1": func() { AppendHeader(nil, Header{Kind: Hello, Channel: 1}, 0) },
		"hello without peer": func() { AppendHello(nil, Hello, HelloMsg{From: "tm-1"}) },
		"request of 0 credit": func() {
			AppendPartitionRequest(nil, 1, PartitionRequestMsg{Job: "j", BufferSize: 1})
		},
		"request replaying without weak": func() {
			AppendPartitionRequest(nil, 1, PartitionRequestMsg{Job: "j", Credit: 1, BufferSize: 1, From: LogPos{Buffers: 1}})
		},
		"release on channel 0":        func() { AppendRelease(nil, 0, LogPos{Buffers: 1}) },
		"log-position flag on credit": func() { AppendHeader(nil, Header{Kind: AddCredit, Flags: FlagLogPos, Channel: 1}, 1) },
		"flag 0x02 on data":           func() { AppendHeader(nil, Header{Kind: Data, Flags: 2, Channel: 1}, 2) },
		"request of a negative edge": func() {
			AppendPartitionRequest(nil, 1, PartitionRequestMsg{Job: "j", Edge: -1, Credit: 1, BufferSize: 1})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

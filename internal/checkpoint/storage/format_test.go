package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

func sampleEncoded(t testing.TB) []byte {
	md := sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef},
		checkpoint.StateFile{Path: "chk-7/1-1-keyed", Size: 0, CRC32C: 0})
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	md := sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef})
	md.Kind = checkpoint.Final
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b[:8]); got != "WEIRCHK\x00" {
		t.Fatalf("magic %q", got)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != 1 {
		t.Fatalf("version %d", v)
	}
	if n := binary.BigEndian.Uint32(b[10:]); int(n) != len(b)-18 {
		t.Fatalf("payload length %d of %d bytes", n, len(b))
	}
	if !bytes.HasPrefix(b[14:], []byte("{\n  \"jobId\": \"job\",\n  \"id\": 7,")) {
		t.Fatalf("payload is not inspectable JSON: %q", b[14:60])
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, md) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, md)
	}
	again, err := Encode(got)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("re-encoding differs (err %v)", err)
	}
}

// reseal rewrites the trailer so that a test can damage the payload without
// tripping the checksum first.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.BigEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
}

func TestDecodeRejects(t *testing.T) {
	good := sampleEncoded(t)
	withPayload := func(p string) []byte {
		b := append([]byte("WEIRCHK\x00\x00\x01"), binary.BigEndian.AppendUint32(nil, uint32(len(p)))...)
		return reseal(append(append(b, p...), 0, 0, 0, 0))
	}
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "metadata truncated: 0 bytes, shorter than the 14-byte header"},
		{"short magic", []byte("WEIR"), "metadata truncated: 4 bytes, shorter than the 14-byte header"},
		{"short garbage", []byte("PK\x03"), `not a weir checkpoint metadata file: bad magic "PK\x03"`},
		{"bad magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), `not a weir checkpoint metadata file: bad magic "XEIRCHK\x00", want "WEIRCHK\x00"`},
		{"newer version", mut(func(b []byte) []byte { b[9] = 5; return b }), "metadata format version 5 was written by a newer weir (this build reads versions 1 to 4); restore with a newer weir"},
		{"version zero", mut(func(b []byte) []byte { b[9] = 0; return b }), "unknown metadata format version 0 (this build reads versions 1 to 4)"},
		{"truncated", good[:len(good)-1], "metadata truncated: " + strconv.Itoa(len(good)-1) + " bytes, header says " + strconv.Itoa(len(good))},
		{"trailing", append(append([]byte(nil), good...), 'x', 'y'), "metadata has 2 trailing bytes after the checksum"},
		{"bad crc", mut(func(b []byte) []byte { b[20] ^= 1; return b }), "metadata checksum mismatch: stored 0x"},
		{"bad json", withPayload(`{"id": 7,`), "metadata payload: bad JSON: unexpected EOF"},
		{"unknown field", withPayload(`{"id": 7, "shiny": true}`), `metadata payload: bad JSON: json: unknown field "shiny"`},
		{"two objects", withPayload(`{"id": 7} {}`), "metadata payload: bad JSON: data after the metadata object"},
		{"bad kind", withPayload(`{"id": 7, "kind": 9}`), "metadata payload: unknown checkpoint kind 9"},
		{"negative id", withPayload(`{"id": -1}`), "metadata payload: negative checkpoint id -1"},
		{"key group outside file", withPayload(`{"id": 1, "operators": [{"uid": "a", "subtasks": [{"subtask": 3, "state": {"uid": "a", "keyed": {"file": {"path": "chk-1/f", "size": 10}, "keyGroups": [{"kg": 5, "off": 8, "len": 3}]}}}]}]}`),
			`metadata payload: operator "a" subtask 3: key group 5 at [8,+3) lies outside state file chk-1/f of 10 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := Decode(tc.in)
			if md != nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, %v; want an ErrCorrupt error", md, err)
			}
			want := "checkpoint data corrupt: " + tc.want
			if got := err.Error(); got != want && !(tc.name == "bad crc" && strings.HasPrefix(got, want)) {
				t.Fatalf("error\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestEncodeNil(t *testing.T) {
	if _, err := Encode(nil); err == nil || err.Error() != "encode checkpoint metadata: metadata is nil" {
		t.Fatalf("Encode(nil) = %v", err)
	}
}

// FuzzDecode checks that Decode never panics on arbitrary bytes and that
// whatever it accepts re-encodes to a fixed point: Encode(Decode(x)) decodes
// again and encodes to the same bytes. (x itself may differ from its
// re-encoding only in JSON spelling, e.g. whitespace or an empty map.)
func FuzzDecode(f *testing.F) {
	good := sampleEncoded(f)
	f.Add(good)
	f.Add(reseal(append([]byte(nil), good...)))
	empty, err := Encode(&checkpoint.Metadata{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(empty)
	f.Add(good[:20])
	f.Add([]byte("WEIRCHK\x00\x00\x01\x00\x00\x00\x02{}\x00\x00\x00\x00"))
	// Version 2: channel state, and a version-2 file claiming version 1.
	v2 := sampleV2(f)
	f.Add(v2)
	v1 := append([]byte(nil), v2...)
	v1[9] = 1
	f.Add(reseal(v1))
	// Version 3: state tables, a version-3 file claiming version 2, and
	// one whose schema bytes do not decode.
	v3, err := Encode(sampleV3(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v3)
	v3as2 := append([]byte(nil), v3...)
	v3as2[9] = 2
	f.Add(reseal(v3as2))
	bad := sampleV3(f)
	bad.Operators[1].States[0].Value = []byte{1, 0xee}
	f.Add(encodeUnchecked(f, bad))
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		enc, err := Encode(md)
		if err != nil {
			t.Fatalf("decoded metadata does not encode: %v", err)
		}
		md2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded metadata does not decode: %v", err)
		}
		enc2, err := Encode(md2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("no fixed point (err %v):\n%q\n%q", err, enc, enc2)
		}
	})
}

// seal wraps an arbitrary payload in a valid version-2 header and
// checksum, so that channel state reaches validation.
func seal(payload []byte) []byte {
	b := append([]byte(magic), 0, 2)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// FuzzDecodePayload reaches the JSON and validation layers, which FuzzDecode
// rarely gets past the checksum to: it fuzzes the payload and seals it.
func FuzzDecodePayload(f *testing.F) {
	good := sampleEncoded(f)
	f.Add(good[headerLen : len(good)-trailerLen])
	f.Add([]byte(`{"id": 1, "operators": [{"uid": "a", "subtasks": [{"subtask": 0, "state": {"uid": "a", "keyed": {"file": {"path": "chk-1/f", "size": 10}, "keyGroups": [{"kg": 0, "off": 2, "len": 3}]}, "operator": {"s": ["AA==", null]}}}]}], "timestamp": "2025-01-01T00:00:00+05:30"}`))
	v2 := sampleV2(f)
	f.Add(v2[headerLen : len(v2)-trailerLen])
	v3, err := Encode(sampleV3(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v3[headerLen : len(v3)-trailerLen])
	f.Fuzz(func(t *testing.T, payload []byte) {
		// Sealed as the newest version, which accepts every field, so
		// that state tables reach validation too.
		md, err := Decode(sealVersion(formatVersion, payload))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		enc, err := Encode(md)
		if err != nil {
			t.Fatalf("decoded metadata does not encode: %v", err)
		}
		md2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded metadata does not decode: %v", err)
		}
		if enc2, err := Encode(md2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("no fixed point (err %v)", err)
		}
	})
}

package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
)

var rewriteV3 = flag.Bool("rewrite-v3-golden", false, "write testdata/metadata-v3.golden from today's encoder (only when introducing it; never to make a failing test pass)")

// schemaOf is T's encoded schema, as a task will report it.
func schemaOf[T any](t testing.TB) []byte {
	t.Helper()
	s, err := codec.SchemaFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	return codec.AppendSchema(nil, s)
}

// row fills in a row's fingerprint.
func row(r checkpoint.StateSchema) checkpoint.StateSchema {
	r.Fingerprint = checkpoint.SchemaFingerprint(r)
	return r
}

// total is the value type of the sample's keyed state.
type total struct {
	Count int64
	Sum   float64
	Last  string `weir:"last"`
}

// withTables adds state tables to sampleMetadata's operators: the
// source's offsets (an operator list), and on "agg" a value state, a map
// state with TTL, and both timer rows. The kinds are internal/state's:
// value 1, list 2, map 3, TTL flag 0x80, timers 5 and event timers 6.
func withTables(t testing.TB, md *checkpoint.Metadata) *checkpoint.Metadata {
	md.Operators[0].States = []checkpoint.StateSchema{
		row(checkpoint.StateSchema{Name: "offsets", Scope: checkpoint.ScopeOperator, Kind: 2, Value: schemaOf[[]byte](t)}),
	}
	key := schemaOf[string](t)
	md.Operators[1].States = []checkpoint.StateSchema{
		row(checkpoint.StateSchema{Name: "total", Scope: checkpoint.ScopeKeyed, Kind: 1, Key: key, KeyHash: "string", Value: schemaOf[total](t)}),
		row(checkpoint.StateSchema{Name: "seen", Scope: checkpoint.ScopeKeyed, Kind: 3 | 0x80, Key: key, KeyHash: "string", UserKey: schemaOf[int64](t), Value: schemaOf[map[string][]uint32](t)}),
		row(checkpoint.StateSchema{Scope: checkpoint.ScopeTimers, Kind: 5, Key: key, KeyHash: "string"}),
		row(checkpoint.StateSchema{Scope: checkpoint.ScopeTimers, Kind: 6, Key: key, KeyHash: "string"}),
	}
	return md
}

func sampleV3(t testing.TB) *checkpoint.Metadata {
	return withTables(t, sampleMetadata("job", 7,
		checkpoint.StateFile{Path: "chk-7/1-0-keyed", Size: 10, CRC32C: 0xdeadbeef},
		checkpoint.StateFile{Path: "chk-7/1-1-keyed", Size: 12, CRC32C: 0x01020304}))
}

// sealVersion wraps a payload in a header of the given version and a
// valid checksum, so that it reaches JSON decoding and validation.
func sealVersion(version uint16, payload []byte) []byte {
	b := binary.BigEndian.AppendUint16([]byte(magic), version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// encodeUnchecked writes md as version 3 without Encode's validation, for
// tests of what Decode refuses.
func encodeUnchecked(t testing.TB, md *checkpoint.Metadata) []byte {
	t.Helper()
	p, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return sealVersion(3, p)
}

func TestEncodeDecodeVersion3(t *testing.T) {
	md := sampleV3(t)
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != 3 {
		t.Fatalf("metadata with state tables written as version %d, want 3", v)
	}
	for _, s := range []string{`"states": [`, `"scope": "keyed"`, `"scope": "timers"`, `"keyHash": "string"`, `"userKey": "`, `"fp": "`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("payload lacks %s", s)
		}
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
	// The stored bytes are the schemas the tasks reported.
	s, _, err := codec.DecodeSchema(got.Operators[1].States[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := codec.SchemaFor[total](); !reflect.DeepEqual(s, want) {
		t.Fatalf("value schema decodes to %v, want %v", s, want)
	}
	// Without tables the same metadata is version 1 again, and with
	// channel state version 2: a table alone decides on version 3.
	for i := range got.Operators {
		got.Operators[i].States = nil
	}
	b1, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(b1[8:]); v != 1 {
		t.Fatalf("metadata without state tables written as version %d, want 1", v)
	}
	// A version-3 file without any table (a writer of a stateless job
	// that always writes 3) is read too.
	v3 := append([]byte(nil), b1...)
	v3[9] = 3
	if _, err := Decode(reseal(v3)); err != nil {
		t.Fatalf("version 3 without state tables: %v", err)
	}
}

// A version-3 file, as this build writes them, decodes to the same
// metadata and re-encodes byte for byte. It pins the JSON names of the
// state table and the fingerprint function: a change to either breaks it.
func TestDecodeVersion3Golden(t *testing.T) {
	checkGolden(t, "testdata/metadata-v3.golden", 3, sampleV3(t), *rewriteV3)
}

// A state table in a version-1 or version-2 file means the file is not
// what it says: those writers had no tables.
func TestDecodeRejectsStateTableInOlderVersions(t *testing.T) {
	b, err := Encode(sampleV3(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []byte{1, 2} {
		old := append([]byte(nil), b...)
		old[9] = v
		_, err := Decode(reseal(old))
		want := "checkpoint data corrupt: metadata format version " + itoa(int64(v)) + ` holds a state table (operator "source" state "offsets", scope operator), which only version 3 can`
		if !errors.Is(err, ErrCorrupt) || err.Error() != want {
			t.Errorf("version %d: err %v, want %q", v, err, want)
		}
	}
}

func TestDecodeRejectsBadStateTable(t *testing.T) {
	// Every case mutates a valid version-3 sample; fp recomputes the
	// fingerprint after a change, as a writer would.
	fp := func(r *checkpoint.StateSchema) { r.Fingerprint = checkpoint.SchemaFingerprint(*r) }
	for _, tc := range []struct {
		name string
		mut  func(md *checkpoint.Metadata)
		want string
	}{
		{"duplicate row", func(md *checkpoint.Metadata) {
			md.Operators[1].States = append(md.Operators[1].States, md.Operators[1].States[0])
		}, `operator "agg" state "total" (keyed): listed twice in the state table`},
		{"duplicate timers", func(md *checkpoint.Metadata) {
			md.Operators[1].States[3].Kind = 5
		}, `operator "agg" timers of kind 5: listed twice in the state table`},
		{"undecodable schema", func(md *checkpoint.Metadata) {
			r := &md.Operators[1].States[0]
			r.Value = []byte{1, 0xee}
			fp(r)
		}, `operator "agg" state "total" (keyed): value schema: `},
		{"newer schema format", func(md *checkpoint.Metadata) {
			r := &md.Operators[0].States[0]
			r.Value[0] = 9
			fp(r)
		}, `operator "source" state "offsets" (operator): value schema: `},
		{"zero schema", func(md *checkpoint.Metadata) {
			r := &md.Operators[1].States[1]
			r.UserKey = []byte{codec.SchemaFormatVersion}
			fp(r)
		}, `operator "agg" state "seen" (keyed): user-key schema: `},
		{"bytes after the schema", func(md *checkpoint.Metadata) {
			r := &md.Operators[1].States[2]
			r.Key = append(r.Key, 0)
			fp(r)
		}, `operator "agg" timers of kind 5: key schema: 1 bytes after the 2-byte schema`},
		{"wrong fingerprint", func(md *checkpoint.Metadata) {
			md.Operators[1].States[0].Fingerprint = "0000000000000000"
		}, `operator "agg" state "total" (keyed): fingerprint "0000000000000000" does not match its schemas (`},
		{"unknown scope", func(md *checkpoint.Metadata) {
			md.Operators[0].States[0].Scope = "global"
		}, `operator "source" state "offsets" (global): unknown scope "global"`},
		{"no name", func(md *checkpoint.Metadata) {
			md.Operators[1].States[0].Name = ""
		}, `operator "agg" state "" (keyed): no name`},
		{"named timers", func(md *checkpoint.Metadata) {
			md.Operators[1].States[2].Name = "t"
		}, `operator "agg" timers of kind 5: timers are named "t"; want "", as their keyed-state sections`},
		{"keyed without key", func(md *checkpoint.Metadata) {
			r := &md.Operators[1].States[0]
			r.Key, r.KeyHash = nil, ""
			fp(r)
		}, `operator "agg" state "total" (keyed): key schema present is false; scope keyed wants true`},
		{"operator state with a key", func(md *checkpoint.Metadata) {
			r := &md.Operators[0].States[0]
			r.Key = md.Operators[1].States[0].Key
			fp(r)
		}, `operator "source" state "offsets" (operator): key schema present is true; scope operator wants false`},
		{"timers with a value", func(md *checkpoint.Metadata) {
			r := &md.Operators[1].States[3]
			r.Value = md.Operators[1].States[0].Value
			fp(r)
		}, `operator "agg" timers of kind 6: value schema present is true; scope timers wants false`},
		{"user key outside keyed state", func(md *checkpoint.Metadata) {
			r := &md.Operators[0].States[0]
			r.UserKey = md.Operators[1].States[1].UserKey
			fp(r)
		}, `operator "source" state "offsets" (operator): a user-key schema, which only keyed (map) state has`},
		{"key hash without key", func(md *checkpoint.Metadata) {
			md.Operators[0].States[0].KeyHash = "string"
		}, `operator "source" state "offsets" (operator): key-hash class "string" without a key schema`},
		{"operator list state without a row", func(md *checkpoint.Metadata) {
			md.Operators[0].States[0].Name = "positions"
		}, `operator "source": subtask 0 has operator list state "offsets" without a row in the state table`},
		{"keyed state without rows", func(md *checkpoint.Metadata) {
			md.Operators[1].States = nil
		}, `operator "agg": subtask 0 has keyed state but the state table has no keyed or timers rows`},
		{"channel state without a row", func(md *checkpoint.Metadata) {
			withChannels(md)
		}, `operator "agg": subtask 0 has channel state of input 0 without a row "in0" in the state table`},
		{"per-subtask schemas", func(md *checkpoint.Metadata) {
			md.Operators[1].Subtasks[1].State.Schemas = md.Operators[1].States[:1]
		}, `operator "agg" subtask 1: 1 per-subtask state schemas in the metadata; they belong in acknowledgements and are merged into the operator's state table`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := sampleV3(t)
			tc.mut(md)
			_, err := Decode(encodeUnchecked(t, md))
			want := "checkpoint data corrupt: metadata payload: " + tc.want
			if !errors.Is(err, ErrCorrupt) || err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Decode error\n got %v\nwant %q", err, want)
			}
			// Encode refuses the same metadata, so a writer's bug fails
			// the checkpoint instead of leaving an unreadable one.
			_, err = Encode(md)
			if want := "encode checkpoint 7 metadata: " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Encode error\n got %v\nwant %q", err, want)
			}
		})
	}
}

// A channel-state row makes the channel state of the sample legal: the
// coverage rule asks for a row per input, not for anything more.
func TestStateTableCoversChannelState(t *testing.T) {
	md := withChannels(sampleV3(t))
	md.Operators[1].States = append(md.Operators[1].States,
		row(checkpoint.StateSchema{Name: "in0", Scope: checkpoint.ScopeChannel, Value: schemaOf[string](t)}))
	if _, err := Encode(md); err == nil || !strings.Contains(err.Error(), `without a row "in1"`) {
		t.Fatalf("input 1 without a row: %v", err)
	}
	md.Operators[1].States = append(md.Operators[1].States,
		row(checkpoint.StateSchema{Name: "in1", Scope: checkpoint.ScopeChannel, Value: schemaOf[int64](t)}))
	b, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(b); err != nil {
		t.Fatal(err)
	}
}

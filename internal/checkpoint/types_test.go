package checkpoint

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"
)

// SchemaFingerprint is FNV-1a 64 written out by hand (a pure core may not
// import hash/fnv); this compares it with the standard one.
func TestSchemaFingerprintIsFNV1a(t *testing.T) {
	for _, s := range []StateSchema{
		{},
		{Key: []byte{1, 12}, Value: []byte{1, 5}},
		{Key: []byte{1, 12}, UserKey: []byte{1, 12}, Value: []byte{1, 16, 1, 'T', 0}},
		{Value: make([]byte, 300)},
	} {
		h := fnv.New64a()
		for _, b := range [][]byte{s.Key, s.UserKey, s.Namespace, s.Value} {
			h.Write(binary.AppendUvarint(nil, uint64(len(b))))
			h.Write(b)
		}
		if got, want := SchemaFingerprint(s), fmt.Sprintf("%016x", h.Sum64()); got != want {
			t.Errorf("SchemaFingerprint(%+v) = %s, want %s", s, got, want)
		}
	}
}

// A schema moving to the neighbouring field must change the fingerprint:
// the lengths in the hashed input are what separate the fields.
func TestSchemaFingerprintSeparatesFields(t *testing.T) {
	a := SchemaFingerprint(StateSchema{Key: []byte{1, 12}})
	b := SchemaFingerprint(StateSchema{UserKey: []byte{1, 12}})
	c := SchemaFingerprint(StateSchema{Value: []byte{1, 12}})
	if a == b || b == c || a == c {
		t.Fatalf("fingerprints collide across fields: %s %s %s", a, b, c)
	}
}

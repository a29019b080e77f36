package testutil

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/codec"
)

// CodecGolden guards a persisted encoding of T (a transaction handle, a
// source's position in a checkpoint): the golden file at path holds a
// value as a build wrote it — its schema, then its bytes, each prefixed
// with its length as a uvarint — and must decode, through the schema it
// recorded, into want, as a restore reads it. With write set, or when the
// file does not exist yet, it is written from want first; commit it, and
// never rewrite it for a type change: a change of T must still read it.
func CodecGolden[T any](t *testing.T, path string, want T, write bool) {
	t.Helper()
	if _, err := os.Stat(path); write || os.IsNotExist(err) {
		c, err := codec.For[T]()
		if err != nil {
			t.Fatal(err)
		}
		s, err := codec.SchemaFor[T]()
		if err != nil {
			t.Fatal(err)
		}
		schema := codec.AppendSchema(nil, s)
		value := c.Append(nil, want)
		var b []byte
		b = binary.AppendUvarint(b, uint64(len(schema)))
		b = append(b, schema...)
		b = binary.AppendUvarint(b, uint64(len(value)))
		b = append(b, value...)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote golden %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	part := func(what string) []byte {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			t.Fatalf("golden %s: its %s is cut", path, what)
		}
		p := b[k : k+int(n)]
		b = b[k+int(n):]
		return p
	}
	s, _, err := codec.DecodeSchema(part("schema"))
	if err != nil {
		t.Fatalf("golden %s: schema: %v", path, err)
	}
	dec, compat, err := codec.Resolve[T](s)
	if err != nil {
		t.Fatalf("golden %s: this build cannot read it (%v): a change of %T must keep its persisted values readable", path, err, want)
	}
	got, _, err := dec.Decode(part("value"))
	if err != nil {
		t.Fatalf("golden %s (%s): decode: %v", path, compat, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("golden %s (%s) decodes to\n%+v\nwant\n%+v", path, compat, got, want)
	}
}

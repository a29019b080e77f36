package codec

import "testing"

// The cost of reading state through a migration against reading it with
// the type's own codec: TotalV1's bytes into TotalAdded (a field added),
// TotalReordered (moved) and TotalDropped (one skipped), against
// TotalAdded's own bytes.
//
//	go test ./internal/codec -run XXX -bench 'Decode(Own|Migrated)'
func BenchmarkDecodeOwn(b *testing.B) {
	c, _ := For[TotalAdded]()
	enc := c.Append(nil, TotalAdded{User: "user-17", Count: 12345, Sum: -987654321, Max: 77})
	benchDecode(b, c.(PointerCodec[TotalAdded]), enc)
}

func BenchmarkDecodeMigrated(b *testing.B) {
	b.Run("added", func(b *testing.B) { benchMigrated[TotalAdded](b) })
	b.Run("reordered", func(b *testing.B) { benchMigrated[TotalReordered](b) })
	b.Run("dropped", func(b *testing.B) { benchMigrated[TotalDropped](b) })
}

func benchMigrated[R any](b *testing.B) {
	old, _ := For[TotalV1]()
	enc := old.Append(nil, TotalV1{User: "user-17", Count: 12345, Sum: -987654321})
	s, err := SchemaFor[TotalV1]()
	if err != nil {
		b.Fatal(err)
	}
	d, compat, err := Resolve[R](s)
	if err != nil || compat != CompatibleAfterMigration {
		b.Fatal(compat, err)
	}
	benchDecode(b, d.(interface {
		DecodeInto([]byte, *R) (int, error)
	}), enc)
}

func benchDecode[R any](b *testing.B, d interface {
	DecodeInto([]byte, *R) (int, error)
}, enc []byte) {
	b.ReportAllocs()
	for b.Loop() {
		var v R
		if _, err := d.DecodeInto(enc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

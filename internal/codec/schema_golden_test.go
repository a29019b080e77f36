package codec

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// Schemas are persisted in checkpoints, so their encoding must not change
// unnoticed: testdata/schemas.golden holds the encodings of the types
// below, and this test fails when SchemaFor or AppendSchema writes other
// bytes, or DecodeSchema reads them differently. Rewriting it (-rewrite)
// is a format change: bump SchemaFormatVersion and keep reading version 1.
var rewriteGolden = flag.Bool("rewrite", false, "rewrite testdata/schemas.golden")

const goldenPath = "testdata/schemas.golden"

type GoldenTotal struct {
	User       string
	Count, Sum int64
}

type GoldenStats struct {
	Totals  []GoldenTotal
	ByUser  map[string]*GoldenTotal `weir:"by_user"`
	Window  [2]time.Time
	Peer    netip.Addr
	Ratio   float32
	Flags   []byte
	Parent  *GoldenStats
	Ignored chan int `weir:"-"`
}

func goldenSchemas(t *testing.T) []struct {
	name string
	s    Schema
} {
	return []struct {
		name string
		s    Schema
	}{
		{"int64", schemaOf[int64](t)},
		{"uint8", schemaOf[uint8](t)},
		{"map[string][]bool", schemaOf[map[string][]bool](t)},
		{"GoldenTotal", schemaOf[GoldenTotal](t)},
		{"GoldenStats", schemaOf[GoldenStats](t)},
		{"Node", schemaOf[Node](t)},
	}
}

func TestSchemaGolden(t *testing.T) {
	schemas := goldenSchemas(t)
	if *rewriteGolden {
		var b strings.Builder
		b.WriteString("# Encoded schemas (schema_golden_test.go): name, fingerprint, String, encoding.\n")
		b.WriteString("# A change here is a change of the checkpoint format.\n")
		for _, g := range schemas {
			fmt.Fprintf(&b, "%s\n%016x\n%s\n%x\n\n", g.name, g.s.Fingerprint(), g.s, AppendSchema(nil, g.s))
		}
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 4*len(schemas) {
		t.Fatalf("%s has %d lines, want 4 for each of %d schemas", goldenPath, len(lines), len(schemas))
	}
	for i, g := range schemas {
		name, fp, str, encHex := lines[4*i], lines[4*i+1], lines[4*i+2], lines[4*i+3]
		if name != g.name {
			t.Fatalf("entry %d is %s, want %s", i, name, g.name)
		}
		enc, err := hex.DecodeString(encHex)
		if err != nil {
			t.Fatal(err)
		}
		decoded, n, err := DecodeSchema(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("%s: decode golden %x: %d bytes, %v", name, enc, n, err)
		}
		if decoded.String() != str {
			t.Errorf("%s: golden decodes to %s, want %s", name, decoded, str)
		}
		if got := fmt.Sprintf("%016x", decoded.Fingerprint()); got != fp {
			t.Errorf("%s: golden's fingerprint is %016x, file says %s", name, decoded.Fingerprint(), fp)
		}
		if live := AppendSchema(nil, g.s); !bytes.Equal(live, enc) {
			t.Errorf("%s: SchemaFor now encodes to %x, golden has %x: the schema format changed; bump SchemaFormatVersion", name, live, enc)
		}
		if !decoded.Equal(g.s) {
			t.Errorf("%s: golden decodes to a schema unequal to SchemaFor's", name)
		}
	}
}

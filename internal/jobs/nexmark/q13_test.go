package nexmark

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDefaultSideInput(t *testing.T) {
	s := defaultSideInput()
	for auction := int64(-25_000); auction < 25_000; auction++ {
		got := s.lookup(auction)
		var want []string
		if k := auction % SideInputRows; k >= 0 {
			want = []string{strconv.FormatInt(k, 10)}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("auction %d joins %q, want %q", auction, got, want)
		}
	}
}

func TestWriteSideInputRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "side.csv")
	if err := WriteSideInput(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "0,0\n1,1\n2,2\n") || !strings.HasSuffix(string(data), "\n9999,9999\n") || strings.Count(string(data), "\n") != SideInputRows {
		t.Fatalf("unexpected side input file: %.40q … %q", data, data[len(data)-20:])
	}
	got, err := loadSideInput(path)
	if err != nil {
		t.Fatal(err)
	}
	want := defaultSideInput()
	for i := range want.values {
		if !slices.Equal(got.values[i], want.values[i]) {
			t.Fatalf("key %d: %q, want %q", i-(SideInputRows-1), got.values[i], want.values[i])
		}
	}
}

func TestLoadSideInput(t *testing.T) {
	dir := t.TempDir()
	// No path: the default table. A named file that is missing: an
	// error naming it.
	s, err := loadSideInput("")
	if err != nil || !slices.Equal(s.lookup(10_042), []string{"42"}) {
		t.Fatalf("default table: %v, %q", err, s.lookup(10_042))
	}
	missing := filepath.Join(dir, "missing.csv")
	if _, err := loadSideInput(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: %v, want an error naming %s", err, missing)
	}
	path := filepath.Join(dir, "side.csv")
	if err := os.WriteFile(path, []byte("1,one\n\n2,\"t,w\"\"o\"\n1,uno\n-5,minus five\n10000,never\n9999,last\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = loadSideInput(path)
	if err != nil {
		t.Fatal(err)
	}
	for auction, want := range map[int64][]string{
		1: {"one", "uno"}, 10_001: {"one", "uno"}, 2: {`t,w"o`}, 3: nil, 0: nil, -5: {"minus five"}, -10_005: {"minus five"},
		5: nil, 19_999: {"last"}, 10_000: nil,
	} {
		if got := s.lookup(auction); !slices.Equal(got, want) {
			t.Errorf("auction %d joins %q, want %q", auction, got, want)
		}
	}
	for content, wantErr := range map[string]string{
		"1,a\n2,b,c\n":             "line 2: 3 fields",
		"1,a\nx,b\n":               `line 2: key "x" is not a BIGINT`,
		"1,a\n\n 3,b\n":            `line 3: key " 3" is not a BIGINT`,
		"1,a\n2\n":                 "line 2: 1 fields",
		"1,a\n2,\"b\n":             "line 2:",
		"99999999999999999999,a\n": "line 1: key",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadSideInput(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one naming %s and %q", content, err, path, wantErr)
		}
	}
}

func BenchmarkRefQ13(b *testing.B) { benchStatelessRef(b, "q13") }

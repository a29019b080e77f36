package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeBenchInput(tb testing.TB) ([]string, int) {
	tb.Helper()
	var sb strings.Builder
	const n = 100_000
	for i := range n {
		fmt.Fprintf(&sb, "record-%d,%d,some payload text\n", i, i*7)
	}
	p := filepath.Join(tb.TempDir(), "in")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return []string{p}, n
}

// TestLineReaderNoAllocsPerBatch checks that steady-state batches allocate
// nothing: lines point into the reader's buffer and dst is reused.
func TestLineReaderNoAllocsPerBatch(t *testing.T) {
	files, _ := writeBenchInput(t)
	r, err := NewLineReader(files, Position{})
	must(t, err)
	defer r.Close()
	dst := make([][]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		dst, _, err = r.Next(256, dst)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per batch, want 0", allocs)
	}
}

// BenchmarkLineReader reads 100k lines in batches of 1024; the Scanner
// sub-benchmark is the same-run baseline (bufio.Scanner over the same file).
func BenchmarkLineReader(b *testing.B) {
	files, n := writeBenchInput(b)
	b.Run("LineReader", func(b *testing.B) {
		dst := make([][]byte, 0, 1024)
		for b.Loop() {
			r, err := NewLineReader(files, Position{})
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for {
				dst, _, err = r.Next(1024, dst)
				if errors.Is(err, io.EOF) {
					break
				}
				got += len(dst)
			}
			r.Close()
			if got != n {
				b.Fatalf("%d lines, want %d", got, n)
			}
		}
	})
	b.Run("Scanner", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(files[0])
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			got := 0
			for sc.Scan() {
				got++
			}
			f.Close()
			if got != n {
				b.Fatalf("%d lines, want %d", got, n)
			}
		}
	})
}

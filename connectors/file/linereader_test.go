package file

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeInputs writes files with the given contents and returns their paths
// and the lines a reader must produce.
func writeInputs(t *testing.T, contents ...string) ([]string, []string) {
	t.Helper()
	dir := t.TempDir()
	var files, want []string
	for i, c := range contents {
		p := filepath.Join(dir, fmt.Sprintf("in-%03d", i))
		must(t, os.WriteFile(p, []byte(c), 0o644))
		files = append(files, p)
		if c != "" {
			want = append(want, strings.Split(strings.TrimSuffix(c, "\n"), "\n")...)
		}
	}
	return files, want
}

type batch struct {
	lines []string
	pos   Position
}

// readAll reads to io.EOF in batches of max lines, copying each batch only
// after Next returned, so lines clobbered within a batch are caught.
func readAll(t *testing.T, files []string, from Position, max int) []batch {
	t.Helper()
	r, err := NewLineReader(files, from)
	must(t, err)
	defer r.Close()
	var out []batch
	var dst [][]byte
	for {
		var pos Position
		dst, pos, err = r.Next(max, dst)
		if errors.Is(err, io.EOF) {
			if len(dst) != 0 {
				t.Fatalf("io.EOF with %d lines", len(dst))
			}
			if pos != (Position{File: len(files)}) {
				t.Fatalf("end position = %+v", pos)
			}
			return out
		}
		must(t, err)
		if len(dst) == 0 || len(dst) > max {
			t.Fatalf("batch of %d lines, max %d", len(dst), max)
		}
		b := batch{pos: pos}
		for _, l := range dst {
			b.lines = append(b.lines, string(l))
		}
		out = append(out, b)
	}
}

func flatten(bs []batch) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.lines...)
	}
	return out
}

func TestLineReaderResumesFromEveryPosition(t *testing.T) {
	files, want := writeInputs(t,
		"a1\na2\n\na4\n",      // trailing newline, an empty line
		"",                    // empty file
		"b1\nb2",              // no trailing newline
		"\n",                  // one empty line
		"c1\r\nc2\nc3-no-eol", // '\r' is kept
	)
	if lit := []string{"a1", "a2", "", "a4", "b1", "b2", "", "c1\r", "c2", "c3-no-eol"}; !slices.Equal(want, lit) {
		t.Fatalf("fixture lines = %q, want %q", want, lit)
	}
	for max := 1; max <= 11; max++ {
		batches := readAll(t, files, Position{}, max)
		if got := flatten(batches); !slices.Equal(got, want) {
			t.Fatalf("max %d: lines = %q, want %q", max, got, want)
		}
		// Resuming from the position after every batch yields exactly the
		// lines after it.
		done := 0
		for _, b := range batches {
			done += len(b.lines)
			if got := flatten(readAll(t, files, b.pos, max)); !slices.Equal(got, want[done:]) {
				t.Fatalf("max %d: from %+v: lines = %q, want %q", max, b.pos, got, want[done:])
			}
		}
	}
	// The positions of batches of one line are the line ends; a file is left
	// for the next only once its end was seen, which for a last line without
	// '\n' is when that line is read.
	var pos []Position
	for _, b := range readAll(t, files, Position{}, 1) {
		pos = append(pos, b.pos)
	}
	wantPos := []Position{{0, 3}, {0, 6}, {0, 7}, {0, 10}, {2, 3}, {3, 0}, {3, 1}, {4, 4}, {4, 7}, {5, 0}}
	if !slices.Equal(pos, wantPos) {
		t.Fatalf("positions = %v, want %v", pos, wantPos)
	}
}

func TestLineReaderMidFile(t *testing.T) {
	files, _ := writeInputs(t, "first\nsecond\nthird\n", "x\ny")
	got := flatten(readAll(t, files, Position{File: 0, Offset: int64(len("first\n"))}, 2))
	if want := []string{"second", "third", "x", "y"}; !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
	got = flatten(readAll(t, files, Position{File: 1, Offset: 2}, 2))
	if want := []string{"y"}; !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
	if got := readAll(t, files, Position{File: 0, Offset: 19}, 2); len(flatten(got)) != 2 {
		t.Fatalf("from the end of file 0: %v", got)
	}
	if got := readAll(t, files, Position{File: 2}, 2); len(got) != 0 {
		t.Fatalf("from the end: %v", got)
	}
}

// Long and random-length lines exercise compaction and buffer growth.
func TestLineReaderLongLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var contents []string
	for f := 0; f < 4; f++ {
		var sb strings.Builder
		for l := 0; l < 60; l++ {
			n := rng.IntN(2000)
			if rng.IntN(20) == 0 {
				n = initialReadBuffer + rng.IntN(3*initialReadBuffer)
			}
			sb.WriteString(strings.Repeat(string(rune('a'+(f*60+l)%26)), n))
			sb.WriteString(fmt.Sprintf("-%d-%d", f, l))
			if f != 3 || l != 59 {
				sb.WriteByte('\n')
			}
		}
		contents = append(contents, sb.String())
	}
	files, want := writeInputs(t, contents...)
	for _, max := range []int{1, 7, 1000} {
		batches := readAll(t, files, Position{}, max)
		if got := flatten(batches); !slices.Equal(got, want) {
			t.Fatalf("max %d: %d lines differ from the %d written", max, len(got), len(want))
		}
		mid := batches[len(batches)/2]
		done := 0
		for _, b := range batches[:len(batches)/2+1] {
			done += len(b.lines)
		}
		if got := flatten(readAll(t, files, mid.pos, max)); !slices.Equal(got, want[done:]) {
			t.Fatalf("max %d: resume from %+v differs", max, mid.pos)
		}
	}
}

func TestLineReaderErrors(t *testing.T) {
	files, _ := writeInputs(t, "abc\n")
	for _, tc := range []struct {
		pos  Position
		want string
	}{
		{Position{File: -1}, "file source: position {File:-1 Offset:0} is outside the 1 input files; restore with the file list the position was taken with"},
		{Position{File: 2}, "file source: position {File:2 Offset:0} is outside the 1 input files; restore with the file list the position was taken with"},
		{Position{File: 1, Offset: 3}, "file source: position {File:1 Offset:3} is outside the 1 input files; restore with the file list the position was taken with"},
		{Position{File: 0, Offset: 5}, "file source: resume " + files[0] + " at offset 5: the file has only 4 bytes; it changed since the checkpoint"},
	} {
		if _, err := NewLineReader(files, tc.pos); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.pos, err, tc.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "gone")
	if _, err := NewLineReader([]string{missing}, Position{}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v", err)
	}
	// A file that disappears before the reader reaches it fails the read,
	// after the lines before it, and keeps failing.
	files = append(files, missing)
	r, err := NewLineReader(files, Position{})
	must(t, err)
	got, pos, err := r.Next(10, nil)
	if !errors.Is(err, os.ErrNotExist) || len(got) != 1 || string(got[0]) != "abc" || pos != (Position{File: 1}) {
		t.Fatalf("Next = %q, %+v, %v", got, pos, err)
	}
	if _, _, err2 := r.Next(10, nil); !errors.Is(err2, os.ErrNotExist) {
		t.Fatalf("second Next = %v, want the same error", err2)
	}
	must(t, r.Close())
	if _, _, err := r.Next(0, nil); err == nil {
		t.Fatal("Next after Close succeeded")
	}
}

func TestExpandGlob(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.log", "a.log", "c.log", "a.txt", "10.log", "9.log"} {
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	must(t, os.Mkdir(filepath.Join(dir, "d.log"), 0o755))
	got, err := ExpandGlob(filepath.Join(dir, "*.log"))
	must(t, err)
	var want []string
	for _, name := range []string{"10.log", "9.log", "a.log", "b.log", "c.log"} {
		want = append(want, filepath.Join(dir, name))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ExpandGlob = %q, want %q", got, want)
	}
	pattern := filepath.Join(dir, "*.csv")
	if _, err := ExpandGlob(pattern); err == nil || err.Error() != fmt.Sprintf("expand input glob %q: no file matches; check the path", pattern) {
		t.Fatalf("no match: %v", err)
	}
	if _, err := ExpandGlob(filepath.Join(dir, "d.*")); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Fatalf("only a directory matches: %v", err)
	}
	if _, err := ExpandGlob("[z-a"); err == nil || err.Error() != `expand input glob "[z-a": syntax error in pattern` {
		t.Fatalf("bad pattern: %v", err)
	}
}

func TestPositionEncoding(t *testing.T) {
	for _, p := range []Position{{}, {File: 3, Offset: 17}, {File: 1 << 31, Offset: 1 << 62}} {
		b, err := p.MarshalBinary()
		must(t, err)
		var got Position
		must(t, got.UnmarshalBinary(b))
		if got != p {
			t.Fatalf("round trip = %+v, want %+v", got, p)
		}
	}
	if _, err := (Position{File: -1}).MarshalBinary(); err == nil {
		t.Fatal("negative position encoded")
	}
	for _, b := range [][]byte{nil, {2, 0, 0}, {1, 0}, {1, 0, 0, 0}, {1, 0x80}} {
		var p Position
		if err := p.UnmarshalBinary(b); !errors.Is(err, ErrCorruptPosition) {
			t.Errorf("%x: err = %v, want ErrCorruptPosition", b, err)
		}
	}
}

func FuzzPositionUnmarshal(f *testing.F) {
	b, _ := Position{File: 2, Offset: 99}.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Position
		if p.UnmarshalBinary(b) != nil {
			return
		}
		if p.File < 0 || p.Offset < 0 {
			t.Fatalf("decoded negative position %+v", p)
		}
		again, err := p.MarshalBinary()
		must(t, err)
		var p2 Position
		if err := p2.UnmarshalBinary(again); err != nil || p2 != p {
			t.Fatalf("round trip = %+v, %v; want %+v", p2, err, p)
		}
	})
}

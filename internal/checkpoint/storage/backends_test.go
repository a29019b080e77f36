package storage

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// backend is a filesystem checkpoint storage runs on. The lifecycle, load
// and savepoint tests run on each (forEachBackend), so that every storage
// feature is shown to work on S3 as on a local disk.
type backend struct {
	fs   vfs.FS
	root string        // a fresh folder for the store
	dir  func() string // returns another fresh folder
	n    int           // folders handed out
}

// forEachBackend runs f as a subtest on the local filesystem and on an
// in-process S3 server.
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Run("local", func(t *testing.T) {
		b := &backend{fs: vfs.OS{}, root: t.TempDir()}
		b.dir = func() string { return t.TempDir() }
		f(t, b)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t, "ckpt")
		b := &backend{fs: srv.FS(t), root: "/ckpt/state"}
		b.dir = func() string { b.n++; return fmt.Sprintf("/ckpt/dir%d", b.n) }
		f(t, b)
	})
}

// open opens storage for job "job" on the backend, with fsys (a wrapper of
// b.fs) when given.
func (b *backend) open(t *testing.T, opts ...Option) *FS {
	t.Helper()
	s, err := Open(b.root, "job", append([]Option{WithFS(b.fs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeBytes replaces the file at p on fsys with b.
func writeBytes(t *testing.T, fsys vfs.FS, p string, b []byte) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readBytes returns the contents of the file at p on fsys.
func readBytes(t *testing.T, fsys vfs.FS, p string) []byte {
	t.Helper()
	f, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flipByteFS corrupts one byte of the file at p on fsys.
func flipByteFS(t *testing.T, fsys vfs.FS, p string, off int) {
	t.Helper()
	b := readBytes(t, fsys, p)
	b[off] ^= 0x40
	writeBytes(t, fsys, p, b)
}

// treeFS lists every file and directory under dir on fsys, relative to it,
// sorted.
func treeFS(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		ents, err := fsys.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := filepath.ToSlash(filepath.Join(rel, e.Name()))
			out = append(out, p)
			if e.IsDir() {
				walk(p)
			}
		}
	}
	walk("")
	slices.Sort(out)
	return out
}

// moveTree moves every file under from to the same place under to, one
// file at a time (S3 cannot rename a prefix).
func moveTree(t *testing.T, fsys vfs.FS, from, to string) {
	t.Helper()
	for _, rel := range treeFS(t, fsys, from) {
		src := filepath.Join(from, rel)
		if fi, err := fsys.Stat(src); err != nil || fi.IsDir() {
			continue
		}
		writeBytes(t, fsys, filepath.Join(to, rel), readBytes(t, fsys, src))
	}
	if err := fsys.RemoveAll(from); err != nil {
		t.Fatal(err)
	}
}

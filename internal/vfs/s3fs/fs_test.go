package s3fs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

func writeFile(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
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

func names(ents []fs.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
		if e.IsDir() {
			out[i] += "/"
		}
	}
	return out
}

func TestWriteReadStat(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	for _, size := range []int{0, 1, 100 << 10} {
		name := fmt.Sprintf("/bkt/dir/f%d", size)
		data := bytes.Repeat([]byte{byte(size)}, size)
		writeFile(t, fsys, name, data)
		if got := readFile(t, fsys, name); !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes back, wrote %d", name, len(got), len(data))
		}
		fi, err := fsys.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(size) || fi.IsDir() || !fi.Mode().IsRegular() || fi.Name() != fmt.Sprintf("f%d", size) {
			t.Fatalf("stat %s: name %s size %d dir %v mode %v", name, fi.Name(), fi.Size(), fi.IsDir(), fi.Mode())
		}
	}
	// Create truncates, as os.Create does.
	writeFile(t, fsys, "/bkt/dir/f1", []byte("xy"))
	if got := readFile(t, fsys, "/bkt/dir/f1"); string(got) != "xy" {
		t.Fatalf("overwritten file reads %q", got)
	}
}

// A file bigger than a part goes up as a multipart upload, in pieces that
// straddle part boundaries, and is invisible until Close.
func TestMultipartInvisibleUntilClose(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	cfg := srv.Config()
	cfg.PartSize = 5 << 20
	fsys, err := s3fs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 11<<20+123)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f, err := fsys.Create("/bkt/big")
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(3<<20))
		if w, err := f.Write(rest[:n]); err != nil || w != n {
			t.Fatalf("write: %d %v", w, err)
		}
		rest = rest[n:]
	}
	if _, err := fsys.Stat("/bkt/big"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("object visible before Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fsys, "/bkt/big"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, differing from the %d written", len(got), len(data))
	}
	if err := f.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

func TestNotExist(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	writeFile(t, fsys, "/bkt/d/x", []byte("x"))
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: want fs.ErrNotExist, got %v", what, err)
		}
		if !strings.Contains(err.Error(), "s3://") {
			t.Fatalf("%s: error does not name the object by URL: %v", what, err)
		}
	}
	_, err := fsys.Open("/bkt/d/missing")
	check("open", err)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "s3://bkt/d/missing" {
		t.Fatalf("open: want *fs.PathError for s3://bkt/d/missing, got %#v", err)
	}
	_, err = fsys.Stat("/bkt/d/missing")
	check("stat", err)
	check("remove", fsys.Remove("/bkt/d/missing"))
	err = fsys.Rename("/bkt/d/missing", "/bkt/d/y")
	check("rename", err)
	var le *os.LinkError
	if !errors.As(err, &le) {
		t.Fatalf("rename: want *os.LinkError, got %T", err)
	}
	// A missing bucket is missing too, and the error says what to do.
	_, err = fsys.Open("/nobucket/x")
	check("open in missing bucket", err)
	_, err = fsys.Stat("/nobucket")
	check("stat missing bucket", err)
	if !strings.Contains(err.Error(), `bucket "nobucket" does not exist`) {
		t.Fatalf("missing bucket not named: %v", err)
	}
	_, err = fsys.ReadDir("/nobucket/x")
	check("readdir in missing bucket", err)
	f, err := fsys.Create("/nobucket/x")
	if err == nil {
		err = f.Close()
	}
	check("create in missing bucket", err)
	if !strings.Contains(err.Error(), `bucket "nobucket" does not exist`) {
		t.Fatalf("missing bucket not named: %v", err)
	}
	// Remove of a prefix that has objects is ENOTEMPTY, as for a directory.
	if err := fsys.Remove("/bkt/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty prefix: %v", err)
	}
	// Paths must be absolute.
	if _, err := fsys.Open("b/d/x"); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("relative path: %v", err)
	}
}

func TestDirectories(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	for _, n := range []string{"/bkt/j/a-b", "/bkt/j/a/x", "/bkt/j/a/y/z", "/bkt/j/c", "/bkt/j/chk-1/f", "/bkt/j/chk-10/f", "/bkt/other"} {
		writeFile(t, fsys, n, []byte(n))
	}
	ents, err := fsys.ReadDir("/bkt/j")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(ents), []string{"a/", "a-b", "c", "chk-1/", "chk-10/"}; !slices.Equal(got, want) {
		t.Fatalf("readdir /b/j = %q, want %q", got, want)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || fi.IsDir() != e.IsDir() || e.Type().IsDir() != e.IsDir() {
			t.Fatalf("entry %s: info %v %v", e.Name(), fi, err)
		}
	}
	for _, d := range []string{"/", "/bkt", "/bkt/j", "/bkt/j/a", "/bkt/j/a/y/"} {
		fi, err := fsys.Stat(d)
		if err != nil || !fi.IsDir() {
			t.Fatalf("stat %s: %v %v", d, fi, err)
		}
	}
	// An empty or missing prefix lists as empty; an object is no directory.
	if ents, err := fsys.ReadDir("/bkt/nothing"); err != nil || len(ents) != 0 {
		t.Fatalf("readdir missing prefix: %v %v", names(ents), err)
	}
	if _, err := fsys.ReadDir("/bkt/j/c"); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("readdir of an object: %v", err)
	}
	if err := fsys.MkdirAll("/bkt/new/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir("/bkt/new"); err != nil {
		t.Fatal(err)
	}
	// RemoveAll of chk-1 leaves chk-10 alone.
	if err := fsys.RemoveAll("/bkt/j/chk-1"); err != nil {
		t.Fatal(err)
	}
	ents, err = fsys.ReadDir("/bkt/j")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(ents), []string{"a/", "a-b", "c", "chk-10/"}; !slices.Equal(got, want) {
		t.Fatalf("after removeall chk-1: %q, want %q", got, want)
	}
	if err := fsys.RemoveAll("/bkt/j/missing"); err != nil {
		t.Fatalf("removeall of a missing prefix: %v", err)
	}
	if err := fsys.RemoveAll("/bkt"); err == nil {
		t.Fatal("removeall of a whole bucket was not refused")
	}
	if err := fsys.Remove("/bkt/j/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat("/bkt/j/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed object still there: %v", err)
	}
}

// Listing and deleting go through many pages: more objects than one
// listing returns (1000), and directories whose keys straddle page ends.
func TestManyObjects(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	const files, dirs = 1100, 40
	var want []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				f, err := fsys.Create(n)
				if err == nil {
					_, err = f.Write([]byte("x"))
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
				if err != nil {
					mu.Lock()
					t.Error(err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range files {
		n := fmt.Sprintf("f%05d", i)
		want = append(want, n)
		work <- "/bkt/j/" + n
	}
	for i := range dirs {
		n := fmt.Sprintf("d%03d", i)
		want = append(want, n+"/")
		for k := range 3 {
			work <- fmt.Sprintf("/bkt/j/%s/%d", n, k)
		}
	}
	work <- "/bkt/j-sibling"
	close(work)
	wg.Wait()
	slices.Sort(want)
	for _, page := range []int{0, 7} {
		s3fs.SetPageSize(fsys, page)
		ents, err := fsys.ReadDir("/bkt/j")
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ents); !slices.Equal(got, want) {
			t.Fatalf("page size %d: readdir lists %d entries, want %d (first difference near %q)", page, len(got), len(want), firstDiff(got, want))
		}
	}
	s3fs.SetPageSize(fsys, 0)
	if err := fsys.RemoveAll("/bkt/j"); err != nil {
		t.Fatal(err)
	}
	if ents, err := fsys.ReadDir("/bkt/j"); err != nil || len(ents) != 0 {
		t.Fatalf("after removeall: %d entries, %v", len(ents), err)
	}
	if got := readFile(t, fsys, "/bkt/j-sibling"); string(got) != "x" {
		t.Fatalf("removeall /b/j touched /b/j-sibling: %q", got)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " vs " + b[i]
		}
	}
	return "the end"
}

func TestRename(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	writeFile(t, fsys, "/bkt/c/_metadata.tmp", []byte("meta"))
	if err := fsys.Rename("/bkt/c/_metadata.tmp", "/bkt/c/_metadata"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fsys, "/bkt/c/_metadata"); string(got) != "meta" {
		t.Fatalf("renamed object reads %q", got)
	}
	if _, err := fsys.Stat("/bkt/c/_metadata.tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("source still there after rename: %v", err)
	}
}

func TestFileDirections(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	fsys := srv.FS(t)
	w, err := fsys.Create("/bkt/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a file being created succeeded")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fsys.Open("/bkt/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write to a file opened for reading succeeded")
	}
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Create("/bkt"); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("create of a bucket: %v", err)
	}
}

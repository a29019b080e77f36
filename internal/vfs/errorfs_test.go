package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestErrorFSInjectsAndRecords(t *testing.T) {
	dir := t.TempDir()
	rec := &Recorder{}
	fsys := WithErrors(OS{}, Injectors{rec, OnOp(OpWrite, "full", syscall.ENOSPC)})

	f, err := fsys.Create(filepath.Join(dir, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(filepath.Join(dir, "ok"), filepath.Join(dir, "ok2")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}

	g, err := fsys.Create(filepath.Join(dir, "full"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.Write([]byte("x"))
	var pe *fs.PathError
	if n != 0 || !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "full") || pe.Op != "write" {
		t.Fatalf("write to full: n=%d err=%v", n, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "full")); err != nil || len(b) != 0 {
		t.Fatalf("injected write reached the file: %q %v", b, err)
	}

	r, err := fsys.Open(filepath.Join(dir, "ok2"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read back %q %v", b, err)
	}
	r.Close()

	want := []string{
		"create /ok", "write /ok", "sync /ok", "close /ok",
		"rename /ok2", "syncdir ",
		"create /full", "write /full", "close /full",
		"open /ok2", "read /ok2", "read /ok2", "close /ok2",
	}
	if got := rec.Ops(dir); !slices.Equal(got, want) {
		t.Fatalf("ops:\n got %q\nwant %q", got, want)
	}
}

func TestErrorFSFailedOpIsNotPerformed(t *testing.T) {
	dir := t.TempDir()
	fsys := WithErrors(OS{}, Injectors{
		OnOp(OpMkdirAll, "", ErrInjected),
		OnOp(OpRename, "b", ErrInjected),
	})
	if err := fsys.MkdirAll(filepath.Join(dir, "d"), 0o755); !errors.Is(err, ErrInjected) {
		t.Fatalf("mkdirall: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory created despite injected error: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var le *os.LinkError
	if err := fsys.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); !errors.As(err, &le) || !errors.Is(err, ErrInjected) {
		t.Fatalf("rename: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Fatalf("source moved despite injected error: %v", err)
	}
}

func TestOpString(t *testing.T) {
	for op := Op(0); op < numOps; op++ {
		if op.String() == "" {
			t.Fatalf("op %d has no name", op)
		}
	}
	if got := Op(200).String(); got != "op(200)" {
		t.Fatalf("unknown op: %q", got)
	}
}

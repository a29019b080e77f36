package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

func TestOpenCreatesJobDirAndRemovesProbe(t *testing.T) {
	root := t.TempDir()
	s, err := Open(filepath.Join(root, "state"), "job-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "state", "job-1"); s.JobDir() != want {
		t.Fatalf("JobDir %q, want %q", s.JobDir(), want)
	}
	if got := tree(t, root); !slices.Equal(got, []string{"state", "state/job-1"}) {
		t.Fatalf("files after Open: %q", got)
	}
}

func TestOpenUnwritableRoot(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A path below a regular file fails even for root, which ignores
	// permission bits.
	_, err := Open(filepath.Join(file, "state"), "job")
	want := fmt.Sprintf("state dir %s/state is not writable: mkdir %s: not a directory; choose another --state-dir or fix its permissions", file, file)
	if err == nil || err.Error() != want || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Open error\n got %v\nwant %s", err, want)
	}
}

func TestOpenProbeFails(t *testing.T) {
	root := t.TempDir()
	fsys := vfs.WithErrors(vfs.OS{}, vfs.OnOp(vfs.OpCreate, probeName, syscall.EACCES))
	_, err := Open(root, "job", WithFS(fsys))
	// The probe's name is random before its fixed suffix.
	re := regexp.MustCompile("^" + regexp.QuoteMeta(fmt.Sprintf("state dir %s is not writable: create %s/job/.", root, root)) +
		"[0-9a-f]{12}" + regexp.QuoteMeta(probeName+": permission denied; choose another --state-dir or fix its permissions") + "$")
	if err == nil || !re.MatchString(err.Error()) {
		t.Fatalf("Open error\n got %v\nwant %s", err, re)
	}
}

func TestOpenRejectsBadJobID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "a/b", `a\b`} {
		if _, err := Open(t.TempDir(), id); err == nil {
			t.Errorf("Open with job id %q succeeded", id)
		}
	}
}

func TestWriteFileReadFile(t *testing.T) {
	s := openStore(t, WithBufferSize(16))
	ctx := context.Background()
	data := content(7, "3-1-keyed")
	f, err := s.WriteFile(ctx, 7, "3-1-keyed", func(w io.Writer) error {
		// Many small writes through a small buffer: the checksum must
		// cover exactly the bytes that reached the file.
		for i := range data {
			if _, err := w.Write(data[i : i+1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := checkpoint.StateFile{Path: "chk-7/3-1-keyed", Size: int64(len(data)), CRC32C: crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))}
	if f != want {
		t.Fatalf("StateFile %+v, want %+v", f, want)
	}
	onDisk, err := os.ReadFile(filepath.Join(s.JobDir(), "chk-7", "3-1-keyed"))
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("file on disk differs (err %v)", err)
	}
	got, err := s.ReadFile(ctx, f)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile: %v", err)
	}
}

func TestWriteFileEmpty(t *testing.T) {
	s := openStore(t)
	f, err := s.WriteFile(context.Background(), 1, "empty", func(io.Writer) error { return nil })
	if err != nil || f != (checkpoint.StateFile{Path: "chk-1/empty"}) {
		t.Fatalf("WriteFile = %+v, %v", f, err)
	}
	if b, err := s.ReadFile(context.Background(), f); err != nil || len(b) != 0 {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestReadFileDetectsDamage(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	data := content(3, "x")
	f, err := s.WriteFile(ctx, 3, "x", func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(s.JobDir(), "chk-3", "x")
	flipByte(t, abs, 5)
	damaged, _ := os.ReadFile(abs)
	crc := crc32.Checksum(damaged, castagnoli)
	cases := []struct {
		name string
		f    checkpoint.StateFile
		want string
	}{
		{"flipped byte", f, fmt.Sprintf("checksum mismatch: crc32c 0x%08x, 0x%08x recorded", crc, f.CRC32C)},
		{"shorter than recorded", checkpoint.StateFile{Path: f.Path, Size: f.Size + 1, CRC32C: f.CRC32C}, fmt.Sprintf("size mismatch: file has %d bytes, %d recorded", f.Size, f.Size+1)},
		{"longer than recorded", checkpoint.StateFile{Path: f.Path, Size: f.Size - 1, CRC32C: f.CRC32C}, fmt.Sprintf("size mismatch: file is longer than the %d bytes recorded", f.Size-1)},
		{"missing", checkpoint.StateFile{Path: "chk-3/gone", Size: 1}, "missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.ReadFile(ctx, tc.f)
			want := fmt.Sprintf("read state file %s: checkpoint data corrupt: %s", filepath.Join(s.JobDir(), filepath.FromSlash(tc.f.Path)), tc.want)
			if b != nil || !errors.Is(err, ErrCorrupt) || err.Error() != want {
				t.Fatalf("ReadFile error\n got %v\nwant %s", err, want)
			}
		})
	}
}

func TestReadFileRefusesPathsOutsideJobDir(t *testing.T) {
	s := openStore(t)
	for _, p := range []string{"../other/chk-1/x", "/etc/passwd", ""} {
		if _, err := s.ReadFile(context.Background(), checkpoint.StateFile{Path: p}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ReadFile(%q) = %v, want ErrCorrupt", p, err)
		}
	}
}

func TestWriteFileConcurrent(t *testing.T) {
	s := openStore(t, WithBufferSize(32))
	ctx := context.Background()
	const n = 16
	got := make([]checkpoint.StateFile, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("%d-0-keyed", i)
			got[i], errs[i] = s.WriteFile(ctx, 5, name, func(w io.Writer) error {
				_, err := w.Write(content(5, name))
				return err
			})
		})
	}
	wg.Wait()
	for i := range n {
		name := fmt.Sprintf("%d-0-keyed", i)
		data := content(5, name)
		want := checkpoint.StateFile{Path: "chk-5/" + name, Size: int64(len(data)), CRC32C: crc32.Checksum(data, castagnoli)}
		if errs[i] != nil || got[i] != want {
			t.Fatalf("file %d: %+v, %v; want %+v", i, got[i], errs[i], want)
		}
		if b, err := s.ReadFile(ctx, got[i]); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("file %d: ReadFile %v", i, err)
		}
	}
}

func TestWriteFileRejectsReservedNames(t *testing.T) {
	s := openStore(t)
	for _, name := range []string{"", ".", "..", "a/b", "_metadata", "_metadata.tmp", ".hidden"} {
		if _, err := s.WriteFile(context.Background(), 1, name, func(io.Writer) error { return nil }); err == nil {
			t.Errorf("WriteFile(%q) succeeded", name)
		}
	}
}

func TestWriteFileDiskFull(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpCreate} {
		t.Run(op.String(), func(t *testing.T) {
			fsys := vfs.WithErrors(vfs.OS{}, vfs.OnOp(op, "2-0-keyed", syscall.ENOSPC))
			s := openStore(t, WithFS(fsys), WithBufferSize(64))
			abs := filepath.Join(s.JobDir(), "chk-4", "2-0-keyed")
			_, err := s.WriteFile(context.Background(), 4, "2-0-keyed", func(w io.Writer) error {
				_, err := w.Write(content(4, "2-0-keyed"))
				return err
			})
			want := fmt.Sprintf("write state file %s: %s %s: no space left on device", abs, op, abs)
			if !errors.Is(err, syscall.ENOSPC) || err == nil || err.Error() != want {
				t.Fatalf("WriteFile error\n got %v\nwant %s", err, want)
			}
			if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("partial state file left behind: %v", err)
			}
		})
	}
}

func TestWriteFileCallbackError(t *testing.T) {
	s := openStore(t)
	boom := errors.New("serializer exploded")
	_, err := s.WriteFile(context.Background(), 1, "f", func(w io.Writer) error { return boom })
	if !errors.Is(err, boom) || err.Error() != "write state file "+filepath.Join(s.JobDir(), "chk-1", "f")+": serializer exploded" {
		t.Fatalf("WriteFile error %v", err)
	}
}

func TestWriteFileCancelled(t *testing.T) {
	s := openStore(t, WithBufferSize(16))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := s.WriteFile(ctx, 1, "f", func(w io.Writer) error {
		if _, err := w.Write(make([]byte, 32)); err != nil {
			return err
		}
		cancel()
		_, err := w.Write(make([]byte, 32))
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteFile after cancel: %v", err)
	}
}

func TestWriteMetadataOperationOrder(t *testing.T) {
	rec := &vfs.Recorder{}
	s := openStore(t, WithFS(vfs.WithErrors(vfs.OS{}, rec)))
	rec.Reset()
	path, err := s.WriteMetadata(context.Background(), sampleMetadata("job", 9))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.JobDir(), "chk-9", "_metadata"); path != want {
		t.Fatalf("path %q, want %q", path, want)
	}
	want := []string{
		"stat /chk-9/_metadata",
		"mkdirall /chk-9",
		"create /chk-9/_metadata.tmp",
		"write /chk-9/_metadata.tmp",
		"sync /chk-9/_metadata.tmp",
		"close /chk-9/_metadata.tmp",
		"rename /chk-9/_metadata",
		"syncdir /chk-9",
		"syncdir ",
	}
	if got := rec.Ops(s.JobDir()); !slices.Equal(got, want) {
		t.Fatalf("operations\n got %q\nwant %q", got, want)
	}
}

func TestWriteMetadataRefusesSecondCompletion(t *testing.T) {
	s := openStore(t)
	writeCheckpoint(t, s, 2)
	_, err := s.WriteMetadata(context.Background(), sampleMetadata("job", 2))
	want := fmt.Sprintf("write metadata %s: checkpoint 2 is already complete; checkpoint ids must not be reused", filepath.Join(s.JobDir(), "chk-2", "_metadata"))
	if err == nil || err.Error() != want {
		t.Fatalf("second WriteMetadata: %v", err)
	}
}

// TestCrashBeforeRename covers a crash while the metadata is being written:
// whether the .tmp file is torn or whole, without the rename the checkpoint
// does not exist, restore falls back to the previous one, and start-up
// cleanup removes the leftover.
func TestCrashBeforeRename(t *testing.T) {
	for _, torn := range []bool{true, false} {
		t.Run(fmt.Sprintf("torn=%v", torn), func(t *testing.T) {
			renameFails := vfs.OnOp(vfs.OpRename, "chk-2/_metadata", vfs.ErrInjected)
			var failRename bool
			s := openStore(t, WithFS(vfs.WithErrors(vfs.OS{}, vfs.InjectorFunc(func(op vfs.Op, p string) error {
				if failRename {
					return renameFails.MaybeError(op, p)
				}
				return nil
			}))))
			md1 := writeCheckpoint(t, s, 1)
			for _, name := range stateNames {
				if _, err := s.WriteFile(context.Background(), 2, name, func(w io.Writer) error { _, err := w.Write(content(2, name)); return err }); err != nil {
					t.Fatal(err)
				}
			}
			enc, err := Encode(sampleMetadata("job", 2))
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(s.JobDir(), "chk-2", "_metadata.tmp")
			if torn {
				// What a crash mid-write leaves: a prefix of the bytes.
				if err := os.WriteFile(tmp, enc[:len(enc)/2], 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				failRename = true
				if _, err := s.WriteMetadata(context.Background(), sampleMetadata("job", 2)); !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("WriteMetadata with failing rename: %v", err)
				}
				failRename = false
				// A crash would have kept the whole .tmp that WriteMetadata
				// cleaned up; put it back.
				if err := os.WriteFile(tmp, enc, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ids, err := s.Completed()
			if err != nil || len(ids) != 1 || ids[0] != 1 {
				t.Fatalf("Completed = %v, %v; want [1]", ids, err)
			}
			md, skipped, err := s.LoadLatest(context.Background())
			if err != nil || len(skipped) != 0 || md.ID != 1 || md.Timestamp != md1.Timestamp {
				t.Fatalf("LoadLatest = %+v, %v, %v; want checkpoint 1, nothing skipped", md, skipped, err)
			}
			if err := s.CleanIncomplete(); err != nil {
				t.Fatal(err)
			}
			want := []string{"chk-1", "chk-1/1-0-keyed", "chk-1/1-1-keyed", "chk-1/_metadata"}
			if got := tree(t, s.JobDir()); !slices.Equal(got, want) {
				t.Fatalf("after CleanIncomplete: %q", got)
			}
		})
	}
}

func TestWriteMetadataSyncFailureTakesMetadataBack(t *testing.T) {
	fail := false
	s := openStore(t, WithFS(vfs.WithErrors(vfs.OS{}, vfs.InjectorFunc(func(op vfs.Op, p string) error {
		if fail && op == vfs.OpSyncDir && filepath.Base(p) == "chk-3" {
			return syscall.EIO
		}
		return nil
	}))))
	fail = true
	_, err := s.WriteMetadata(context.Background(), sampleMetadata("job", 3))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("WriteMetadata: %v", err)
	}
	if ids, err := s.Completed(); err != nil || len(ids) != 0 {
		t.Fatalf("Completed after failed sync = %v, %v; want none", ids, err)
	}
}

package storage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

func TestLoadLatestRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		writeCheckpoint(t, s, 1)
		want := writeCheckpoint(t, s, 2)
		md, skipped, err := s.LoadLatest(context.Background())
		if err != nil || len(skipped) != 0 {
			t.Fatalf("LoadLatest: %v, skipped %v", err, skipped)
		}
		if !reflect.DeepEqual(md, want) {
			t.Fatalf("LoadLatest\n got %+v\nwant %+v", md, want)
		}
		for i, name := range stateNames {
			b, err := s.ReadFile(context.Background(), md.Operators[1].Subtasks[i].State.Keyed.File)
			if err != nil || string(b) != string(content(2, name)) {
				t.Fatalf("state file %s: %v", name, err)
			}
		}
	})
}

func TestLoadLatestNoCheckpoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		// An incomplete directory does not count as a checkpoint.
		if err := b.fs.MkdirAll(filepath.Join(s.JobDir(), "chk-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		md, skipped, err := s.LoadLatest(context.Background())
		if md != nil || skipped != nil || !errors.Is(err, ErrNoCheckpoint) {
			t.Fatalf("LoadLatest = %v, %v, %v; want ErrNoCheckpoint", md, skipped, err)
		}
	})
}

func TestLoadLatestFallsBackOverCorruptStateFile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		writeCheckpoint(t, s, 8)
		writeCheckpoint(t, s, 9)
		abs := filepath.Join(s.JobDir(), "chk-9", "1-0-keyed")
		flipByteFS(t, b.fs, abs, 3)
		damaged := readBytes(t, b.fs, abs)
		orig := content(9, "1-0-keyed")

		md, skipped, err := s.LoadLatest(context.Background())
		if err != nil || md.ID != 8 {
			t.Fatalf("LoadLatest = %v, %v; want checkpoint 8", md, err)
		}
		want := []string{fmt.Sprintf("checkpoint %s/chk-9: state file chk-9/1-0-keyed: checkpoint data corrupt: checksum mismatch: crc32c 0x%08x, 0x%08x recorded",
			s.JobDir(), crc32.Checksum(damaged, castagnoli), crc32.Checksum(orig, castagnoli))}
		if got := errStrings(skipped); !slices.Equal(got, want) || !errors.Is(skipped[0], ErrCorrupt) {
			t.Fatalf("skipped\n got %q\nwant %q", got, want)
		}
	})
}

func TestLoadLatestFallsBackOverBadMetadata(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, fsys vfs.FS, path string)
		why    string // "" when the checkpoint simply does not exist
	}{
		{"truncated", func(t *testing.T, fsys vfs.FS, p string) {
			b := readBytes(t, fsys, p)
			writeBytes(t, fsys, p, b[:len(b)-7])
		}, "_metadata: checkpoint data corrupt: metadata truncated: %d bytes, header says %d"},
		{"garbage", func(t *testing.T, fsys vfs.FS, p string) {
			writeBytes(t, fsys, p, []byte("hello, I am not metadata"))
		}, `_metadata: checkpoint data corrupt: not a weir checkpoint metadata file: bad magic "hello, I", want "WEIRCHK\x00"`},
		{"empty", func(t *testing.T, fsys vfs.FS, p string) {
			writeBytes(t, fsys, p, nil)
		}, "_metadata: checkpoint data corrupt: metadata truncated: 0 bytes, shorter than the 14-byte header"},
		{"missing", func(t *testing.T, fsys vfs.FS, p string) {
			if err := fsys.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"missing state file", func(t *testing.T, fsys vfs.FS, p string) {
			if err := fsys.Remove(filepath.Join(filepath.Dir(p), "1-1-keyed")); err != nil {
				t.Fatal(err)
			}
		}, "state file chk-5/1-1-keyed: checkpoint data corrupt: missing"},
		{"wrong directory", func(t *testing.T, fsys vfs.FS, p string) {
			writeBytes(t, fsys, p, readBytes(t, fsys, filepath.Join(filepath.Dir(filepath.Dir(p)), "chk-4", "_metadata")))
		}, "_metadata: checkpoint data corrupt: metadata is of checkpoint 4, not 5; it was copied into the wrong directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b *backend) {
				s := b.open(t)
				want4 := writeCheckpoint(t, s, 4)
				writeCheckpoint(t, s, 5)
				mdPath := filepath.Join(s.JobDir(), "chk-5", "_metadata")
				size := int64(len(readBytes(t, b.fs, mdPath)))
				tc.damage(t, b.fs, mdPath)
				md, skipped, err := s.LoadLatest(context.Background())
				if err != nil || !reflect.DeepEqual(md, want4) {
					t.Fatalf("LoadLatest = %+v, %v; want checkpoint 4", md, err)
				}
				var want []string
				if tc.why != "" {
					why := tc.why
					if tc.name == "truncated" {
						why = fmt.Sprintf(why, size-7, size)
					}
					want = []string{fmt.Sprintf("checkpoint %s/chk-5: %s", s.JobDir(), why)}
				}
				if got := errStrings(skipped); !slices.Equal(got, want) {
					t.Fatalf("skipped\n got %q\nwant %q", got, want)
				}
			})
		})
	}
}

func TestLoadLatestNoneVerifies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		writeCheckpoint(t, s, 1)
		writeCheckpoint(t, s, 2)
		for _, id := range []string{"chk-1", "chk-2"} {
			writeBytes(t, b.fs, filepath.Join(s.JobDir(), id, "_metadata"), []byte("junk"))
		}
		md, skipped, err := s.LoadLatest(context.Background())
		reason := `_metadata: checkpoint data corrupt: not a weir checkpoint metadata file: bad magic "junk"`
		wantSkipped := []string{
			fmt.Sprintf("checkpoint %s/chk-2: %s", s.JobDir(), reason),
			fmt.Sprintf("checkpoint %s/chk-1: %s", s.JobDir(), reason),
		}
		if got := errStrings(skipped); md != nil || !slices.Equal(got, wantSkipped) {
			t.Fatalf("LoadLatest = %v, skipped %q", md, got)
		}
		want := fmt.Sprintf("load latest checkpoint from %s: none of the 2 completed checkpoints verifies; restore an older checkpoint with --from, or start without state in a new state folder: %s\n%s", s.JobDir(), wantSkipped[0], wantSkipped[1])
		if err == nil || err.Error() != want || !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoCheckpoint) {
			t.Fatalf("error\n got %v\nwant %s", err, want)
		}
	})
}

func TestLoadLatestCancelled(t *testing.T) {
	s := openStore(t)
	writeCheckpoint(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.LoadLatest(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("LoadLatest with cancelled context: %v", err)
	}
}

func TestLoadPath(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		want := writeCheckpoint(t, s, 3)
		writeCheckpoint(t, s, 4)
		for _, p := range []string{
			filepath.Join(s.JobDir(), "chk-3"),
			filepath.Join(s.JobDir(), "chk-3") + "/",
			filepath.Join(s.JobDir(), "chk-3", "_metadata"),
		} {
			t.Run(p, func(t *testing.T) {
				md, view, err := LoadPath(context.Background(), p, WithFS(b.fs))
				if err != nil || !reflect.DeepEqual(md, want) {
					t.Fatalf("LoadPath = %+v, %v", md, err)
				}
				if view.JobDir() != s.JobDir() {
					t.Fatalf("view rooted at %s, want %s", view.JobDir(), s.JobDir())
				}
				b, err := view.ReadFile(context.Background(), md.Operators[1].Subtasks[1].State.Keyed.File)
				if err != nil || string(b) != string(content(3, "1-1-keyed")) {
					t.Fatalf("ReadFile through view: %v", err)
				}
				if _, err := view.WriteMetadata(context.Background(), sampleMetadata("job", 10)); err == nil {
					t.Fatal("WriteMetadata through a read-only view succeeded")
				}
				if err := view.Discard(3); err == nil {
					t.Fatal("Discard through a read-only view succeeded")
				}
			})
		}
	})
}

func TestLoadPathErrors(t *testing.T) {
	s := openStore(t)
	writeCheckpoint(t, s, 3)
	if err := os.MkdirAll(filepath.Join(s.JobDir(), "chk-6"), 0o755); err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(s.JobDir(), "chk-3", "_metadata"), 20)
	chk3 := filepath.Join(s.JobDir(), "chk-3")
	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{chk3, "load checkpoint " + chk3 + ": _metadata: checkpoint data corrupt: metadata checksum mismatch", ErrCorrupt},
		{filepath.Join(s.JobDir(), "chk-6"), "load checkpoint " + filepath.Join(s.JobDir(), "chk-6") + ": no _metadata file, so the checkpoint never completed: no completed checkpoint", ErrNoCheckpoint},
		{filepath.Join(s.JobDir(), "chk-3", "1-0-keyed"), "load checkpoint " + filepath.Join(chk3, "1-0-keyed") + ": not a chk-<n> directory or a _metadata file", nil},
		{s.JobDir(), "load checkpoint " + s.JobDir() + ": directory " + s.JobDir() + " is not named chk-<n>; state file paths are resolved relative to its parent, so keep the checkpoint inside its job directory", nil},
		{filepath.Join(s.JobDir(), "chk-99"), "load checkpoint " + filepath.Join(s.JobDir(), "chk-99") + ": stat " + filepath.Join(s.JobDir(), "chk-99") + ": no such file or directory; pass a chk-<n> directory or its _metadata file", os.ErrNotExist},
	} {
		md, view, err := LoadPath(context.Background(), tc.path)
		if md != nil || view != nil || err == nil {
			t.Fatalf("LoadPath(%s) = %v, %v, %v", tc.path, md, view, err)
		}
		got := err.Error()
		if tc.is == ErrCorrupt {
			got = got[:min(len(got), len(tc.want))] // the checksums follow
		}
		if got != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Fatalf("LoadPath(%s) error\n got %v\nwant %s", tc.path, err, tc.want)
		}
	}
}

// Verification covers channel-state files: a damaged one makes LoadLatest
// fall back to the checkpoint before.
func TestLoadLatestFallsBackOverCorruptChannelState(t *testing.T) {
	s := openStore(t)
	writeUnalignedCheckpoint(t, s, 4)
	md := writeUnalignedCheckpoint(t, s, 5)
	got, skipped, err := s.LoadLatest(context.Background())
	if err != nil || got.ID != 5 || len(skipped) != 0 {
		t.Fatalf("undamaged: %v, %v, %v", got, skipped, err)
	}
	path := md.Operators[1].Subtasks[1].State.Channels.File.Path
	if err := os.Truncate(filepath.Join(s.JobDir(), path), 20); err != nil {
		t.Fatal(err)
	}
	got, skipped, err = s.LoadLatest(context.Background())
	if err != nil || got.ID != 4 {
		t.Fatalf("LoadLatest = %v, %v; want checkpoint 4", got, err)
	}
	want := fmt.Sprintf("checkpoint %s/chk-5: state file %s: checkpoint data corrupt: size mismatch: file has 20 bytes, %d recorded", s.JobDir(), path, md.Operators[1].Subtasks[1].State.Channels.File.Size)
	if !slices.Equal(errStrings(skipped), []string{want}) {
		t.Fatalf("skipped %q, want %q", errStrings(skipped), want)
	}
}

// TestReadMetadataDoesNotVerify: a TaskManager reads the _metadata of a
// checkpoint its JobManager verified, and no state file. A damaged state
// file, which LoadPath refuses, is therefore not noticed here (the read of
// the file itself checks it); a missing checkpoint and bad metadata are.
func TestReadMetadataDoesNotVerify(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		s := b.open(t)
		want := writeCheckpoint(t, s, 5)
		flipByteFS(t, b.fs, filepath.Join(s.JobDir(), "chk-5", "1-0-keyed"), 3)
		dir := filepath.Join(s.JobDir(), "chk-5")
		if _, _, err := LoadPath(context.Background(), dir, WithFS(b.fs)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("LoadPath of a damaged checkpoint = %v, want ErrCorrupt", err)
		}
		md, view, err := ReadMetadata(context.Background(), dir, WithFS(b.fs))
		if err != nil || !reflect.DeepEqual(md, want) || view.JobDir() != s.JobDir() {
			t.Fatalf("ReadMetadata = %+v, %v", md, err)
		}
		if md, err := s.ReadMetadata(context.Background(), 5); err != nil || !reflect.DeepEqual(md, want) {
			t.Fatalf("FS.ReadMetadata(5) = %+v, %v", md, err)
		}
		if _, err := s.ReadMetadata(context.Background(), 6); err == nil {
			t.Fatal("Metadata of a checkpoint that does not exist succeeded")
		}
		if _, _, err := ReadMetadata(context.Background(), filepath.Join(s.JobDir(), "chk-6"), WithFS(b.fs)); err == nil {
			t.Fatal("ReadMetadata of a checkpoint that does not exist succeeded")
		}
	})
}

func TestLoadLatestOf(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) { testLoadLatestOf(t, b.open(t)) })
}

func testLoadLatestOf(t *testing.T, s *FS) {
	writeCheckpoint(t, s, 1)
	writeCheckpoint(t, s, 2)
	writeCheckpoint(t, s, 3) // newer, never registered
	ctx := context.Background()
	md, skipped, err := s.LoadLatestOf(ctx, []checkpoint.ID{1, 2})
	if err != nil || md.ID != 2 || len(skipped) != 0 {
		t.Fatalf("LoadLatestOf([1 2]) = %v, %v, %v; want checkpoint 2", md, skipped, err)
	}
	// A registered id without metadata is skipped.
	md, skipped, err = s.LoadLatestOf(ctx, []checkpoint.ID{1, 9})
	if err != nil || md.ID != 1 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "chk-9") {
		t.Fatalf("LoadLatestOf([1 9]) = %v, %v, %v; want checkpoint 1, chk-9 skipped", md, skipped, err)
	}
	if _, _, err := s.LoadLatestOf(ctx, nil); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("LoadLatestOf(nil) = %v, want ErrNoCheckpoint", err)
	}
}

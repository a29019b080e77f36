package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/vfs"
)

// readCountingFS records, per opened file, how often it was opened, how
// many bytes were read from it and the largest buffer a single Read asked
// for: reading a file whole (io.ReadAll, bytes.Buffer.ReadFrom) asks for
// buffers that grow to the file's size, a streaming read does not.
type readCountingFS struct {
	vfs.OS
	mu      sync.Mutex
	opens   map[string]int
	read    map[string]int64
	maxRead map[string]int
}

func newReadCountingFS() *readCountingFS {
	return &readCountingFS{opens: map[string]int{}, read: map[string]int64{}, maxRead: map[string]int{}}
}

func (c *readCountingFS) Open(name string) (vfs.File, error) {
	f, err := c.OS.Open(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.opens[filepath.Base(name)]++
	c.mu.Unlock()
	return &countingFile{File: f, fs: c, name: filepath.Base(name)}, nil
}

type countingFile struct {
	vfs.File
	fs   *readCountingFS
	name string
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.fs.mu.Lock()
	f.fs.read[f.name] += int64(n)
	f.fs.maxRead[f.name] = max(f.fs.maxRead[f.name], len(p))
	f.fs.mu.Unlock()
	return n, err
}

// blockOf is key group kg's block in the test files: blockLen bytes that
// differ from every other key group's.
func blockOf(kg, blockLen int) []byte {
	return bytes.Repeat([]byte{byte('a' + kg%26), byte(kg)}, blockLen/2)
}

// bigKeyedCheckpoint is keyedCheckpoint with blocks of blockLen bytes,
// written and read through fsys.
func bigKeyedCheckpoint(t *testing.T, fsys vfs.FS, maxP, oldP, blockLen int) *restorePoint {
	t.Helper()
	fs, err := storage.Open(t.TempDir(), "job", storage.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	op := checkpoint.OperatorState{UID: "agg", Parallelism: oldP, MaxParallelism: maxP}
	for s := range oldP {
		r := keygroup.RangeFor(maxP, oldP, s)
		var offs []checkpoint.KeyGroupOffset
		f, err := fs.WriteFile(context.Background(), 9, fmt.Sprintf("agg-%d.keyed", s), func(w io.Writer) error {
			var off int64
			for kg := r.Start; kg < r.End; kg++ {
				b := blockOf(kg, blockLen)
				offs = append(offs, checkpoint.KeyGroupOffset{KeyGroup: kg, Offset: off, Length: int64(len(b))})
				off += int64(len(b))
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		op.Subtasks = append(op.Subtasks, checkpoint.SubtaskStateEntry{Subtask: s, State: checkpoint.OperatorSubtaskState{
			UID: "agg", Keyed: &checkpoint.KeyedStateHandle{File: f, KeyGroups: offs},
		}})
	}
	md := &checkpoint.Metadata{ID: 9, Operators: []checkpoint.OperatorState{op}}
	return &restorePoint{md: md, fs: fs, path: "chk-9"}
}

// TestRestoreStreamsKeyedFiles: a subtask that restores a quarter of a
// 2 MiB keyed state file opens it once, when the backend restores (not at
// deployment), reads every byte of it once (the checksum covers the whole
// file) and never with a buffer larger than the restore's read buffer:
// the file is streamed, not read whole.
func TestRestoreStreamsKeyedFiles(t *testing.T) {
	const maxP, blockLen = 16, 128 << 10
	fsys := newReadCountingFS()
	rp := bigKeyedCheckpoint(t, fsys, maxP, 1, blockLen)
	file := filepath.Base(rp.md.Operators[0].Subtasks[0].State.Keyed.File.Path)
	size := rp.md.Operators[0].Subtasks[0].State.Keyed.File.Size
	kgs := keygroup.RangeFor(maxP, 4, 1)
	rs, err := rp.forOperator(context.Background(), "agg", 1, 4, kgs)
	if err != nil {
		t.Fatal(err)
	}
	if n := fsys.opens[file]; n != 0 {
		t.Fatalf("forOperator opened the keyed file %d times; it must leave reading to the backend", n)
	}
	var got []int
	err = state.ForEachBlock(context.Background(), rs.Keyed, kgs, func(kg int, blk []byte) error {
		got = append(got, kg)
		if !bytes.Equal(blk, blockOf(kg, blockLen)) {
			t.Errorf("key group %d: wrong block (%d bytes)", kg, len(blk))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[4 5 6 7]" {
		t.Errorf("restored key groups %v, want [4 5 6 7]", got)
	}
	if fsys.opens[file] != 1 || fsys.read[file] != size {
		t.Errorf("file opened %d times, %d bytes read; want once, all %d bytes (checksum)", fsys.opens[file], fsys.read[file], size)
	}
	if m := fsys.maxRead[file]; m > 256<<10 || int64(m) >= size/4 {
		t.Errorf("a Read asked for %d bytes of a %d-byte file: the file is read whole, not streamed", m, size)
	}
}

// TestRestoreCorruptKeyedFile: a keyed state file that is damaged — in a
// block the subtask restores, in a block it skips, cut short or grown —
// fails the restore with an error wrapping ErrCorrupt that names the
// file, although the damage may lie in bytes the subtask does not decode.
func TestRestoreCorruptKeyedFile(t *testing.T) {
	const maxP, blockLen = 8, 4 << 10
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"owned block", func(b []byte) []byte { b[5*blockLen+7] ^= 1; return b }},
		{"skipped block after the owned ones", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"skipped block before the owned ones", func(b []byte) []byte { b[3] ^= 1; return b }},
		{"truncated in an owned block", func(b []byte) []byte { return b[:5*blockLen+10] }},
		{"truncated after the owned blocks", func(b []byte) []byte { return b[:len(b)-1] }},
		{"longer", func(b []byte) []byte { return append(b, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rp := bigKeyedCheckpoint(t, vfs.OS{}, maxP, 1, blockLen)
			f := rp.md.Operators[0].Subtasks[0].State.Keyed.File
			path := filepath.Join(rp.fs.JobDir(), filepath.FromSlash(f.Path))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			kgs := keygroup.RangeFor(maxP, 2, 1) // key groups 4..7 of 0..7
			rs, err := rp.forOperator(context.Background(), "agg", 1, 2, kgs)
			if err != nil {
				t.Fatal(err)
			}
			err = state.ForEachBlock(context.Background(), rs.Keyed, kgs, func(int, []byte) error { return nil })
			if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("restore from a damaged file: %v; want an ErrCorrupt naming %s", err, path)
			}
		})
	}
}

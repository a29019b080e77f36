package state

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// RestoreSource is one keyed state file of a checkpoint and the index of
// its key-group blocks, as returned by KeyedSnapshot.WriteBlocks. The file
// is either opened and streamed (Open, what a restore from checkpoint
// storage does) or already in memory (Data, for tests and small files).
type RestoreSource struct {
	// Name names the file in errors (its path in the checkpoint).
	Name string
	// Size is the file's recorded size; blocks must lie inside it. With
	// Data set, len(Data) is used.
	Size int64
	// Open opens the file at its start. Its reader must check the file
	// as it is read (size and checksum, as storage.FS.OpenFile does) and
	// fail instead of returning io.EOF when the file is damaged: the
	// restore reads the file to its end to see that verdict.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Data is the whole file, used when Open is nil.
	Data []byte
	// KeyGroups locates the blocks the restore may read.
	KeyGroups []checkpoint.KeyGroupOffset
}

// restoreReadBuffer is the read buffer of a streamed restore source.
const restoreReadBuffer = 256 << 10

// ForEachBlock calls fn with every block of sources that belongs to a key
// group of kgs, in file order, after checking that the block lies inside
// its file. A streamed source is read once from start to end: the blocks
// of kgs are handed to fn, the bytes between them are skipped but still
// pass through the source's checksum, and the source is read to its end
// so that a damaged file fails the restore (after fn has seen its blocks:
// callers discard what they restored when ForEachBlock fails). The file
// format has one checksum over the whole file and no per-block checksums,
// so verifying it needs every byte; seeking to the owned blocks only would
// restore unverified bytes.
//
// blk is valid only during the call to fn: a streamed source reuses one
// buffer for its blocks, so the memory a restore needs beyond what fn
// keeps is the largest block plus the read buffer.
func ForEachBlock(ctx context.Context, sources []RestoreSource, kgs keygroup.Range, fn func(kg int, blk []byte) error) error {
	// ctx is checked before every block as well: in-memory sources and
	// readers that ignore ctx would otherwise run a cancelled restore to
	// its end.
	each := func(kg int, blk []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(kg, blk)
	}
	var buf []byte
	for si, src := range sources {
		var err error
		if src.Open == nil {
			err = forEachInMemory(src, kgs, each)
		} else {
			buf, err = forEachStreamed(ctx, src, kgs, buf, each)
		}
		if err != nil {
			return fmt.Errorf("restore keyed state: source %d (%s): %w", si, sourceName(src), err)
		}
	}
	return nil
}

func sourceName(src RestoreSource) string {
	if src.Name == "" {
		return "in memory"
	}
	return src.Name
}

// ownedBlocks returns the blocks of src that belong to kgs, sorted by
// offset, after checking that each lies inside the size-byte file and
// that none overlaps the next.
func ownedBlocks(src RestoreSource, size int64, kgs keygroup.Range) ([]checkpoint.KeyGroupOffset, error) {
	var out []checkpoint.KeyGroupOffset
	for _, kgo := range src.KeyGroups {
		if !kgs.Contains(kgo.KeyGroup) {
			continue
		}
		end := kgo.Offset + kgo.Length
		if kgo.Offset < 0 || kgo.Length < 0 || end < kgo.Offset || end > size {
			return nil, fmt.Errorf("key group %d: block [%d, +%d) outside the %d-byte file: %w",
				kgo.KeyGroup, kgo.Offset, kgo.Length, size, codec.ErrCorrupt)
		}
		out = append(out, kgo)
	}
	slices.SortStableFunc(out, func(a, b checkpoint.KeyGroupOffset) int {
		return int(min(max(a.Offset-b.Offset, -1), 1))
	})
	for i := 1; i < len(out); i++ {
		if p := out[i-1]; p.Offset+p.Length > out[i].Offset {
			return nil, fmt.Errorf("key groups %d and %d: blocks overlap: %w", p.KeyGroup, out[i].KeyGroup, codec.ErrCorrupt)
		}
	}
	return out, nil
}

func forEachInMemory(src RestoreSource, kgs keygroup.Range, fn func(kg int, blk []byte) error) error {
	blocks, err := ownedBlocks(src, int64(len(src.Data)), kgs)
	if err != nil {
		return err
	}
	for _, kgo := range blocks {
		if err := fn(kgo.KeyGroup, src.Data[kgo.Offset:kgo.Offset+kgo.Length]); err != nil {
			return err
		}
	}
	return nil
}

// forEachStreamed reads src from its start to its end, handing its blocks
// of kgs to fn in buf (grown as needed and returned for the next source).
func forEachStreamed(ctx context.Context, src RestoreSource, kgs keygroup.Range, buf []byte, fn func(kg int, blk []byte) error) ([]byte, error) {
	blocks, err := ownedBlocks(src, src.Size, kgs)
	if err != nil {
		return buf, err
	}
	if len(blocks) == 0 {
		return buf, nil // nothing to restore: the caller sent it by mistake
	}
	rc, err := src.Open(ctx)
	if err != nil {
		return buf, err
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, restoreReadBuffer)
	var pos int64
	for _, kgo := range blocks {
		if _, err := r.Discard(int(kgo.Offset - pos)); err != nil {
			return buf, truncated(err, kgo)
		}
		if int64(cap(buf)) < kgo.Length {
			buf = make([]byte, kgo.Length)
		}
		blk := buf[:kgo.Length]
		if _, err := io.ReadFull(r, blk); err != nil {
			return buf, truncated(err, kgo)
		}
		pos = kgo.Offset + kgo.Length
		if err := fn(kgo.KeyGroup, blk); err != nil {
			return buf, err
		}
	}
	// The rest of the file passes through the checksum; the source's
	// reader reports a short, long or damaged file here at the latest.
	// Not r.WriteTo: it reads the source directly and drops an error the
	// buffer already holds (a reader may return its verdict together with
	// the file's last bytes, then io.EOF).
	if _, err := io.Copy(io.Discard, onlyReader{r}); err != nil {
		return buf, err
	}
	return buf, nil
}

// onlyReader hides a reader's WriteTo, so io.Copy reads through Read.
type onlyReader struct{ io.Reader }

// truncated describes a read of block kgo that failed: a reader that
// checks the file reports its own error, a bare end of file is a file
// shorter than its index says.
func truncated(err error, kgo checkpoint.KeyGroupOffset) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("key group %d: file ends before its block [%d, +%d): %w", kgo.KeyGroup, kgo.Offset, kgo.Length, codec.ErrCorrupt)
	}
	return fmt.Errorf("key group %d: %w", kgo.KeyGroup, err)
}

// BytesSource is a RestoreSource streamed from b, for tests and tools
// that hold a file in memory but want the streaming path.
func BytesSource(name string, b []byte, kgs []checkpoint.KeyGroupOffset) RestoreSource {
	return RestoreSource{
		Name: name, Size: int64(len(b)), KeyGroups: kgs,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
	}
}

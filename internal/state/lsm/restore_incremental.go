package lsm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// FileSource reads the files of a checkpoint, checking each against its
// size and CRC32C as it is read (storage.FS.OpenFile): a damaged file
// fails the read with an error that names it.
type FileSource interface {
	OpenFile(ctx context.Context, f checkpoint.StateFile) (io.ReadCloser, error)
}

// IncrementalSource is one old subtask's store to restore from.
type IncrementalSource struct {
	Handle *checkpoint.IncrementalKeyedStateHandle
	Files  FileSource
}

// RestoreStats says where a restore's shared files came from.
type RestoreStats struct {
	// Downloaded counts the bytes read from checkpoint storage.
	Downloaded int64
	// Reused counts the bytes found in the local recovery folder.
	Reused int64
}

// castagnoli is the CRC32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func handleRange(h *checkpoint.IncrementalKeyedStateHandle) keygroup.Range {
	return keygroup.Range{Start: h.KeyGroupStart, End: h.KeyGroupEnd}
}

func overlap(a, b keygroup.Range) keygroup.Range {
	r := keygroup.Range{Start: max(a.Start, b.Start), End: min(a.End, b.End)}
	if r.End < r.Start {
		r.End = r.Start
	}
	return r
}

// RestoreIncremental builds the store from the stores of an incremental
// checkpoint whose key-group ranges overlap the backend's, before the
// operator registers its states. The store with the largest overlap is
// the base: its files are put in place (downloaded, or linked from the
// local recovery folder) and opened as they are; what lies outside the
// backend's range is dropped with two range deletes. The overlap of every
// other store is copied, in key order and without decoding, into SSTs that
// are ingested. No key is inserted through the memtable.
//
// own says that the files lie in this job's shared area, so later
// checkpoints may reference the base's files instead of uploading them
// again. After an error the backend must be closed.
func (b *Backend[K]) RestoreIncremental(ctx context.Context, srcs []IncrementalSource, own bool) (RestoreStats, error) {
	var st RestoreStats
	if len(srcs) == 0 {
		return st, nil
	}
	base := 0
	for i, s := range srcs {
		if overlap(handleRange(s.Handle), b.kgs).Len() > overlap(handleRange(srcs[base].Handle), b.kgs).Len() {
			base = i
		}
	}
	// The empty store made by Open gives way to the base store.
	b.dropBuffer()
	if err := b.db.Close(); err != nil {
		return st, fmt.Errorf("lsm state backend: restore: close empty store: %w", err)
	}
	b.db = nil
	if err := os.RemoveAll(b.dbDir()); err != nil {
		return st, fmt.Errorf("lsm state backend: restore: %w", err)
	}
	bh := srcs[base].Handle
	if err := b.fetch(ctx, srcs[base], b.dbDir(), &st); err != nil {
		return st, err
	}
	if err := b.openDB(); err != nil {
		return st, err
	}
	cat, err := b.readCatalogue()
	if err != nil {
		return st, err
	}
	if r := handleRange(bh); r.Start < b.kgs.Start || r.End > b.kgs.End {
		if err := b.cutToRange(); err != nil {
			return st, err
		}
	}
	for i, s := range srcs {
		if i == base {
			continue
		}
		if err := b.mergeStore(ctx, i, s, cat, &st); err != nil {
			return st, err
		}
	}
	// Timers are in the canonical format.
	var timers []state.RestoreSource
	for _, s := range srcs {
		t := s.Handle.Timers
		if t == nil {
			continue
		}
		files, f := s.Files, t.File
		timers = append(timers, state.RestoreSource{
			Name: f.Path, Size: f.Size, KeyGroups: t.KeyGroups,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return files.OpenFile(ctx, f) },
		})
	}
	if err := b.Restore(ctx, timers); err != nil {
		return st, err
	}
	b.catalogue = cat
	for _, c := range cat {
		b.nextSID = max(b.nextSID, c.ID+1)
	}
	if own {
		b.inc.mu.Lock()
		for _, r := range bh.Shared {
			b.inc.confirmed[r.Local] = r
		}
		b.inc.mu.Unlock()
	}
	return st, nil
}

// fetch puts the files of one store into dir: shared files from the local
// recovery folder when a verified copy is there, else from storage.
func (b *Backend[K]) fetch(ctx context.Context, s IncrementalSource, dir string, st *RestoreStats) error {
	return fetchStore(ctx, s, dir, st, b.linkLocal)
}

// fetchStore is fetch with the local recovery lookup given as link (nil
// when there is no local recovery folder).
func fetchStore(ctx context.Context, s IncrementalSource, dir string, st *RestoreStats, link func(checkpoint.SharedFileRef, string) bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lsm state backend: restore: %w", err)
	}
	for _, r := range s.Handle.Shared {
		dst := filepath.Join(dir, r.Local)
		if link != nil && link(r, dst) {
			st.Reused += r.Size
			continue
		}
		if err := download(ctx, s.Files, r.StateFile(), dst); err != nil {
			return err
		}
		st.Downloaded += r.Size
	}
	for _, p := range s.Handle.Private {
		if err := download(ctx, s.Files, p.File, filepath.Join(dir, p.Local)); err != nil {
			return err
		}
	}
	return nil
}

// download copies a verified file from storage to dst.
func download(ctx context.Context, src FileSource, f checkpoint.StateFile, dst string) error {
	r, err := src.OpenFile(ctx, f)
	if err != nil {
		return fmt.Errorf("lsm state backend: restore: %w", err)
	}
	defer r.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("lsm state backend: restore: %w", err)
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("lsm state backend: restore %s: %w", f.Path, err)
	}
	return nil
}

// readCatalogue reads the state catalogue of the store.
func (b *Backend[K]) readCatalogue() (map[string]checkpoint.StoreState, error) {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: metaPrefix})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	cat := map[string]checkpoint.StoreState{}
	for valid := it.First(); valid; valid = it.Next() {
		v := it.Value()
		if len(v) != 3 {
			return nil, fmt.Errorf("lsm state backend: restore: catalogue entry %q has %d bytes, want 3", it.Key(), len(v))
		}
		name := string(it.Key()[len(metaPrefix):])
		cat[name] = checkpoint.StoreState{Name: name, Kind: v[0], ID: binary.BigEndian.Uint16(v[1:])}
	}
	return cat, it.Error()
}

// cutToRange deletes every state key outside the backend's key groups.
func (b *Backend[K]) cutToRange() error {
	lo := appendGroupPrefix(nil, 0)
	if b.kgs.Start > 0 {
		if err := b.db.DeleteRange(lo, appendGroupPrefix(nil, b.kgs.Start), pebble.NoSync); err != nil {
			return fmt.Errorf("lsm state backend: restore: drop key groups below %d: %w", b.kgs.Start, err)
		}
	}
	if err := b.db.DeleteRange(appendGroupPrefix(nil, b.kgs.End), metaPrefix, pebble.NoSync); err != nil {
		return fmt.Errorf("lsm state backend: restore: drop key groups from %d: %w", b.kgs.End, err)
	}
	return nil
}

// mergeStore copies the overlap of another old store into the base store:
// the store is fetched into a folder of its own and opened read-only, its
// key groups in the overlap are written, state by state in the base's id
// order, into one SST (ids rewritten to the base's catalogue while
// copying), and the SST is ingested.
func (b *Backend[K]) mergeStore(ctx context.Context, i int, s IncrementalSource, cat map[string]checkpoint.StoreState, st *RestoreStats) error {
	ov := overlap(handleRange(s.Handle), b.kgs)
	if ov.Len() == 0 {
		return nil
	}
	dir := filepath.Join(b.dir, "merge-"+strconv.Itoa(i))
	defer os.RemoveAll(dir)
	if err := b.fetch(ctx, s, filepath.Join(dir, "db"), st); err != nil {
		return err
	}
	o := b.pebbleOptions()
	o.ReadOnly = true
	src, err := pebble.Open(filepath.Join(dir, "db"), o)
	if err != nil {
		return fmt.Errorf("lsm state backend: restore: open store %s: %w", s.Handle.StoreID, err)
	}
	defer src.Close()
	// Map the old store's state ids to the base's, adding states the base
	// does not have.
	type move struct{ from, to uint16 }
	var moves []move
	for _, ss := range s.Handle.States {
		c, ok := cat[ss.Name]
		if !ok {
			c = checkpoint.StoreState{Name: ss.Name, Kind: ss.Kind, ID: b.nextFreeSID(cat)}
			meta := append(append([]byte(nil), metaPrefix...), ss.Name...)
			if err := b.db.Set(meta, binary.BigEndian.AppendUint16([]byte{ss.Kind}, c.ID), pebble.NoSync); err != nil {
				return fmt.Errorf("lsm state backend: restore: %w", err)
			}
			cat[ss.Name] = c
		}
		if c.Kind != ss.Kind {
			return fmt.Errorf("lsm state backend: restore: state %q is %s in one old subtask and %s in another: %w", ss.Name, state.Kind(ss.Kind), state.Kind(c.Kind), state.ErrStateMismatch)
		}
		moves = append(moves, move{ss.ID, c.ID})
	}
	slices.SortFunc(moves, func(a, c move) int { return cmp.Compare(a.to, c.to) })
	path := filepath.Join(dir, "ingest.sst")
	f, err := pvfs.Default.Create(path, pvfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("lsm state backend: restore: %w", err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), b.popts.MakeWriterOptions(0, b.db.TableFormat()))
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: appendGroupPrefix(nil, ov.Start), UpperBound: appendGroupPrefix(nil, ov.End)})
	if err != nil {
		w.Close()
		return fmt.Errorf("lsm state backend: restore: %w", err)
	}
	n := 0
	var prefix, key []byte
	err = func() error {
		for kg := ov.Start; kg < ov.End; kg++ {
			for _, m := range moves {
				prefix = appendStatePrefix(prefix[:0], kg, m.from)
				for valid := it.SeekGE(prefix); valid && bytes.HasPrefix(it.Key(), prefix); valid = it.Next() {
					v, err := it.ValueAndErr()
					if err != nil {
						return err
					}
					key = append(key[:0], it.Key()...)
					setSID(key, m.to)
					if err := w.Set(key, v); err != nil {
						return err
					}
					n++
				}
			}
		}
		return it.Error()
	}()
	err = errors.Join(err, it.Close(), w.Close())
	if err != nil {
		return fmt.Errorf("lsm state backend: restore: copy key groups %s of store %s: %w", ov, s.Handle.StoreID, err)
	}
	if n == 0 {
		return nil
	}
	if err := b.db.Ingest(ctx, []string{path}); err != nil {
		return fmt.Errorf("lsm state backend: restore: ingest key groups %s of store %s: %w", ov, s.Handle.StoreID, err)
	}
	return nil
}

func (b *Backend[K]) nextFreeSID(cat map[string]checkpoint.StoreState) uint16 {
	var n uint16
	for _, c := range cat {
		n = max(n, c.ID+1)
	}
	return n
}

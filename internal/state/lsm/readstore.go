package lsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// Store is one subtask's store of an incremental checkpoint, opened
// read-only on local disk, for tools that read a checkpoint's keyed state
// without running its job (internal/stateread: weir state export and
// package stateproc). Its files are put in place as an incremental restore
// puts those of a store it merges (fetchStore), and opened with the
// options of every store, whose list merger gives the files their meaning.
//
// WriteBlocks turns it into the canonical format with the very sections a
// full snapshot of the subtask writes (storeSection), so a reader of
// canonical checkpoints reads an incremental one without a second decoder
// of the store's key layout.
type Store struct {
	h     *checkpoint.IncrementalKeyedStateHandle
	files FileSource
	dir   string
	db    *pebble.DB
	cache *pebble.Cache
}

// OpenStore fetches the files of src's store (each checked against its
// size and CRC32C as it is read) into a new folder under opts.Dir
// (os.TempDir() when empty) and opens them read-only. Of opts only Dir,
// Name, BlockCacheSize and Logger matter. Close removes the folder.
func OpenStore(ctx context.Context, src IncrementalSource, opts Options) (*Store, error) {
	h := src.Handle
	if err := checkHandle(h); err != nil {
		return nil, err
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}
	parent := opts.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("lsm store %s: create %s: %w; give a writable folder for the store's files", h.StoreID, parent, err)
	}
	dir, err := os.MkdirTemp(parent, "weir-read-"+checkpoint.FileNamePart(opts.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("lsm store %s: make a folder in %s: %w; give a writable folder for the store's files", h.StoreID, parent, err)
	}
	s := &Store{h: h, files: src.Files, dir: dir, cache: pebble.NewCache(opts.BlockCacheSize)}
	var st RestoreStats
	if err := fetchStore(ctx, src, s.dbDir(), &st, nil); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	o := storeOptions(s.cache, opts)
	o.ReadOnly = true
	if s.db, err = pebble.Open(s.dbDir(), o); err != nil {
		return nil, errors.Join(fmt.Errorf("lsm store %s: open its files: %w", h.StoreID, err), s.Close())
	}
	return s, nil
}

// checkHandle refuses a handle whose range or catalogue a store could not
// have written, before anything is fetched.
func checkHandle(h *checkpoint.IncrementalKeyedStateHandle) error {
	if h.KeyGroupStart < 0 || h.KeyGroupEnd > 1<<15 || h.KeyGroupEnd < h.KeyGroupStart {
		return fmt.Errorf("lsm store %s: key-group range [%d, %d) is not a range of at most 32768 key groups: %w", h.StoreID, h.KeyGroupStart, h.KeyGroupEnd, codec.ErrCorrupt)
	}
	names, ids := map[string]bool{}, map[uint16]bool{}
	for _, ss := range h.States {
		switch state.Kind(ss.Kind).Base() {
		case state.KindValue, state.KindList, state.KindMap, state.KindReducing:
		default:
			return fmt.Errorf("lsm store %s: state %q has kind %d, which a store does not hold: %w", h.StoreID, ss.Name, ss.Kind, codec.ErrCorrupt)
		}
		if names[ss.Name] || ids[ss.ID] || ss.ID == maxStates {
			return fmt.Errorf("lsm store %s: state %q or its id %d appears twice in the catalogue, or the id is reserved: %w", h.StoreID, ss.Name, ss.ID, codec.ErrCorrupt)
		}
		names[ss.Name], ids[ss.ID] = true, true
	}
	return nil
}

func (s *Store) dbDir() string { return filepath.Join(s.dir, "db") }

// Dir is the store's folder. Callers may put files of their own beside
// the store's "db" folder (a canonical copy of it); Close removes them.
func (s *Store) Dir() string { return s.dir }

// KeyGroups is the key-group range the store holds.
func (s *Store) KeyGroups() keygroup.Range {
	return keygroup.Range{Start: s.h.KeyGroupStart, End: s.h.KeyGroupEnd}
}

// WriteBlocks writes the store's keyed state and the subtask's timers in
// the canonical block format, one block per key group that has an entry,
// as a full snapshot of the subtask writes them, and returns where each
// block lies in w. Values of TTL states are written as the store holds
// them: an expired value that no read or cleanup removed yet is written
// with its timestamp (a full snapshot leaves it out; the handle does not
// record the time to live that would tell).
func (s *Store) WriteBlocks(ctx context.Context, w io.Writer) ([]checkpoint.KeyGroupOffset, error) {
	kgs := s.KeyGroups()
	timers, err := s.timerSections(ctx)
	if err != nil {
		return nil, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: appendGroupPrefix(nil, kgs.Start), UpperBound: appendGroupPrefix(nil, kgs.End)})
	if err != nil {
		return nil, fmt.Errorf("lsm store %s: %w", s.h.StoreID, err)
	}
	// storeSection reads through its snapshot's iterator; this snapshot
	// is only that iterator (the store is read-only, nothing moves).
	snap := &snapshot[struct{}]{it: it}
	secs := timers
	for _, ss := range s.h.States {
		secs = append(secs, &storeSection[struct{}]{s: snap, name: ss.Name, kind: state.Kind(ss.Kind), sid: ss.ID})
	}
	state.SortSections(secs)
	offsets, err := state.WriteBlocks(ctxWriter{ctx, w}, kgs, secs)
	if err = errors.Join(err, it.Close()); err != nil {
		return nil, fmt.Errorf("lsm store %s: %w", s.h.StoreID, err)
	}
	return offsets, nil
}

// timerSections reads the handle's timers file (canonical, timer sections
// only) into one section per timer kind. Timers are few next to the state
// (one or a few per active key; a running task holds them all in memory),
// so holding their payloads here is what the task does anyway.
func (s *Store) timerSections(ctx context.Context) ([]state.Section, error) {
	t := s.h.Timers
	if t == nil {
		return nil, nil
	}
	f, files := t.File, s.files
	src := state.RestoreSource{
		Name: f.Path, Size: f.Size, KeyGroups: t.KeyGroups,
		Open: func(ctx context.Context) (io.ReadCloser, error) { return files.OpenFile(ctx, f) },
	}
	byKind := map[state.Kind]*timerSection{}
	err := state.ForEachBlock(ctx, []state.RestoreSource{src}, s.KeyGroups(), func(kg int, blk []byte) error {
		return state.ParseBlock(kg, blk, func(name string, k state.Kind, payload []byte) error {
			if name != "" {
				return fmt.Errorf("the timers file holds state %q: %w", name, codec.ErrCorrupt)
			}
			sec := byKind[k]
			if sec == nil {
				sec = &timerSection{kind: k, groups: map[int][]byte{}}
				byKind[k] = sec
			}
			sec.groups[kg] = append([]byte(nil), payload...) // blk is reused
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lsm store %s: timers: %w", s.h.StoreID, err)
	}
	var out []state.Section
	for _, sec := range byKind {
		out = append(out, sec)
	}
	return out, nil
}

// timerSection is one timer kind's canonical payloads by key group.
type timerSection struct {
	kind   state.Kind
	groups map[int][]byte
}

func (t *timerSection) SectionName() string     { return "" }
func (t *timerSection) SectionKind() state.Kind { return t.kind }

func (t *timerSection) AppendGroup(dst []byte, kg int) ([]byte, bool, error) {
	p, ok := t.groups[kg]
	if !ok {
		return dst, false, nil
	}
	return append(dst, p...), true, nil
}

// ctxWriter stops a long WriteBlocks between blocks once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Close closes the store and removes its folder.
func (s *Store) Close() error {
	var errs []error
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	if s.cache != nil {
		s.cache.Unref()
		s.cache = nil
	}
	errs = append(errs, os.RemoveAll(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close lsm store %s in %s: %w", s.h.StoreID, s.dir, err)
	}
	return nil
}

// Package stateread reads the state a checkpoint or savepoint holds
// without the program that wrote it: per operator, the entries of each
// keyed state (key, user key, value or list elements, TTL timestamps), the
// timers and the operator list state, as the bytes the program's codecs
// wrote. The state table each checkpoint records (metadata v3, one
// checkpoint.StateSchema per state) says how to split those bytes, which
// the canonical keyed format stores back to back without lengths; a
// caller turns them into values with the same schemas (codec.AppendJSON,
// as weir state export does).
//
// It reads canonical keyed state (full checkpoints of either backend and
// every savepoint) and incremental (lsm) checkpoints: each subtask's store
// is fetched into a folder under Checkpoint.TempDir, opened read-only and
// written out as a canonical file (lsm.OpenStore), which is then read as
// any other, so both kinds yield the same entries through the same code.
// A checkpoint written before schemas were recorded (metadata v1, v2)
// still lists its states, but their entries cannot be split: they come as
// raw payloads (State.Known false).
//
// Owns: reading a verified checkpoint's state by its schemas. Must not
// touch: writing checkpoints, the runtime.
package stateread

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/lsm"
	"github.com/weirstream/weir/internal/twophase"
)

// Checkpoint is a loaded and verified checkpoint or savepoint.
type Checkpoint struct {
	// Path is the path it was opened with.
	Path string
	// Metadata is its _metadata.
	Metadata *checkpoint.Metadata
	// TempDir is the folder under which the stores of an incremental
	// checkpoint are fetched and written out as canonical files while
	// they are read: one subtask's store and its canonical copy at a time
	// (KeyedSources: every subtask's canonical copy). Empty is
	// os.TempDir().
	TempDir string
	fs      *storage.FS
}

// Open loads the checkpoint at path (a chk-N folder, its _metadata file, or
// a savepoint folder) and verifies it as a restore would: the metadata's
// checksum and every state file's size and CRC32C.
func Open(ctx context.Context, path string, opts ...storage.Option) (*Checkpoint, error) {
	md, fs, err := storage.LoadPath(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Path: path, Metadata: md, fs: fs}, nil
}

// Files is the checkpoint's storage, rooted at its job folder, for
// copying its files (each verified as it is read).
func (c *Checkpoint) Files() *storage.FS { return c.fs }

// HasSchemas reports whether the checkpoint records state schemas: whether
// any operator has a state table (metadata format version 3).
func (c *Checkpoint) HasSchemas() bool {
	for _, op := range c.Metadata.Operators {
		if len(op.States) > 0 {
			return true
		}
	}
	return false
}

// Operator is one operator's state in the checkpoint.
type Operator struct {
	UID            string
	Parallelism    int
	MaxParallelism int
	// States are the operator's keyed states by name, then its timers
	// (processing time, event time), then its operator list states by
	// name.
	States []*State
	// Known is set when the checkpoint recorded the operator's state
	// table; without it (a checkpoint written before schemas were
	// recorded) States come from the data and have no schemas.
	Known bool
	// Incremental is set when the operator's keyed state is in an
	// incremental (lsm) store: reading its keyed states and timers
	// fetches each subtask's store (see Checkpoint.TempDir).
	Incremental bool

	md *checkpoint.OperatorState
}

// State is one state of an operator.
type State struct {
	Operator string
	// Name is the registered name; "" for timers.
	Name string
	// Scope is checkpoint.ScopeKeyed, ScopeTimers or ScopeOperator.
	Scope string
	// Kind is the keyed state's kind with its TTL flag, or the timer
	// section's kind; 0 for operator list state.
	Kind state.Kind
	// Known is set when the schemas below are the recorded ones. Row is
	// the recorded row then.
	Known bool
	Row   checkpoint.StateSchema
	// Key is the operator's key (keyed state and timers), UserKey a map
	// state's user key, Value the value, list element, map value or
	// operator list element. A two-phase-commit sink's state
	// ("two-phase-commit") is the transaction handle: its elements are
	// the sink's bookkeeping around handles (TwoPhase splits it).
	Key, UserKey, Value codec.Schema

	skipKey, skipUserKey, skipValue func([]byte) (int, error)
}

// KindName is the kind as weir state export writes it: value, list, map,
// reducing, processing-timer, event-timer or operator-list.
func (s *State) KindName() string {
	switch s.Scope {
	case checkpoint.ScopeOperator:
		return "operator-list"
	case checkpoint.ScopeTimers:
		if s.Kind == state.KindEventTimers {
			return "event-timer"
		}
		return "processing-timer"
	}
	switch s.Kind.Base() {
	case state.KindValue:
		return "value"
	case state.KindList:
		return "list"
	case state.KindMap:
		return "map"
	case state.KindReducing:
		return "reducing"
	}
	return fmt.Sprintf("kind-%d", uint8(s.Kind))
}

// TTL reports whether the state's values carry last-access timestamps.
func (s *State) TTL() bool { return s.Kind.HasTTL() }

// Operators returns the operators that hold state, in the metadata's
// order. For an operator without a recorded state table it reads the
// keyed state files' block headers to find the states.
func (c *Checkpoint) Operators(ctx context.Context) ([]*Operator, error) {
	var out []*Operator
	for i := range c.Metadata.Operators {
		md := &c.Metadata.Operators[i]
		op := &Operator{UID: md.UID, Parallelism: md.Parallelism, MaxParallelism: md.MaxParallelism, Known: len(md.States) > 0, md: md}
		for _, st := range md.Subtasks {
			if st.State.Incremental != nil {
				op.Incremental = true
			}
		}
		if op.Known {
			for _, r := range md.States {
				if r.Scope != checkpoint.ScopeKeyed && r.Scope != checkpoint.ScopeTimers && r.Scope != checkpoint.ScopeOperator {
					continue // channel and weak-log rows describe records in flight
				}
				s, err := knownState(md.UID, r)
				if err != nil {
					return nil, err
				}
				op.States = append(op.States, s)
			}
		} else if err := c.scanStates(ctx, op); err != nil {
			return nil, err
		}
		if len(op.States) == 0 && !hasState(md) {
			continue
		}
		sortStates(op.States)
		out = append(out, op)
	}
	return out, nil
}

func hasState(md *checkpoint.OperatorState) bool {
	for _, st := range md.Subtasks {
		if st.State.Keyed != nil || st.State.Incremental != nil || len(st.State.Operator) > 0 {
			return true
		}
	}
	return false
}

func sortStates(ss []*State) {
	rank := func(s *State) int {
		switch s.Scope {
		case checkpoint.ScopeKeyed:
			return 0
		case checkpoint.ScopeTimers:
			return 1
		}
		return 2
	}
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Kind < b.Kind
	})
}

// knownState decodes a row's schemas.
func knownState(uid string, r checkpoint.StateSchema) (*State, error) {
	s := &State{Operator: uid, Name: r.Name, Scope: r.Scope, Kind: state.Kind(r.Kind), Known: true, Row: r}
	if r.Scope == checkpoint.ScopeOperator {
		s.Kind = 0
	}
	dec := func(what string, b []byte, into *codec.Schema, skip *func([]byte) (int, error)) error {
		if len(b) == 0 {
			return nil
		}
		sc, _, err := codec.DecodeSchema(b)
		if err != nil {
			return fmt.Errorf("operator %s: %s schema of %s: %w", uid, what, label(s), err)
		}
		*into, *skip = sc, codec.SkipFunc(sc)
		return nil
	}
	if err := dec("key", r.Key, &s.Key, &s.skipKey); err != nil {
		return nil, err
	}
	if err := dec("user key", r.UserKey, &s.UserKey, &s.skipUserKey); err != nil {
		return nil, err
	}
	if err := dec("value", r.Value, &s.Value, &s.skipValue); err != nil {
		return nil, err
	}
	need := map[string]bool{"key": s.Scope != checkpoint.ScopeOperator, "value": s.Scope != checkpoint.ScopeTimers, "user key": s.Kind.Base() == state.KindMap}
	have := map[string]bool{"key": s.skipKey != nil, "value": s.skipValue != nil, "user key": s.skipUserKey != nil}
	for _, what := range []string{"key", "user key", "value"} {
		if need[what] && !have[what] {
			return nil, fmt.Errorf("operator %s: the state table's row of %s has no %s schema: %w", uid, label(s), what, codec.ErrCorrupt)
		}
	}
	return s, nil
}

func label(s *State) string {
	switch s.Scope {
	case checkpoint.ScopeTimers:
		return s.KindName() + "s"
	case checkpoint.ScopeOperator:
		return fmt.Sprintf("operator list state %q", s.Name)
	}
	return fmt.Sprintf("state %q", s.Name)
}

// scanStates lists the states of an operator without a state table from
// its data: operator list state names, and the sections of its keyed
// state files.
func (c *Checkpoint) scanStates(ctx context.Context, op *Operator) error {
	seen := map[string]*State{}
	add := func(scope, name string, k state.Kind) {
		key := fmt.Sprintf("%s/%s/%d", scope, name, k)
		if seen[key] == nil {
			s := &State{Operator: op.UID, Name: name, Scope: scope, Kind: k}
			seen[key] = s
			op.States = append(op.States, s)
		}
	}
	for _, st := range op.md.Subtasks {
		for name := range st.State.Operator {
			add(checkpoint.ScopeOperator, name, 0)
		}
	}
	if op.Incremental {
		// The store's catalogue names its states; only the small timers
		// file need be read, not the store.
		return c.scanIncremental(ctx, op, add)
	}
	return c.forEachSection(ctx, op, func(_, _ int, name string, k state.Kind, _ []byte) error {
		if name == "" {
			add(checkpoint.ScopeTimers, "", k)
		} else {
			add(checkpoint.ScopeKeyed, name, k)
		}
		return nil
	})
}

// forEachSection calls fn with every section of the operator's keyed
// state files, subtask by subtask, in file order; an incremental
// subtask's store is read as the canonical file it is written out as.
func (c *Checkpoint) forEachSection(ctx context.Context, op *Operator, fn func(subtask, kg int, name string, k state.Kind, payload []byte) error) error {
	all := keygroup.Range{Start: 0, End: max(op.MaxParallelism, 1)}
	for _, st := range sortedSubtasks(op.md) {
		err := func() error {
			src, release, err := c.KeyedSource(ctx, op.md, st)
			if err != nil || release == nil {
				return err
			}
			err = state.ForEachBlock(ctx, []state.RestoreSource{src}, all, func(kg int, blk []byte) error {
				return state.ParseBlock(kg, blk, func(name string, k state.Kind, payload []byte) error {
					return fn(st.Subtask, kg, name, k, payload)
				})
			})
			return errors.Join(err, release())
		}()
		if err != nil {
			return fmt.Errorf("operator %s subtask %d: %w", op.UID, st.Subtask, err)
		}
	}
	return nil
}

func sortedSubtasks(md *checkpoint.OperatorState) []checkpoint.SubtaskStateEntry {
	subtasks := slices.Clone(md.Subtasks)
	sort.SliceStable(subtasks, func(i, j int) bool { return subtasks[i].Subtask < subtasks[j].Subtask })
	return subtasks
}

// KeyedSources returns the keyed state of every subtask of operator uid
// as canonical files, for a backend's Restore: the subtasks' keyed files,
// and for an incremental checkpoint each subtask's store written out as
// a canonical file under TempDir, which release removes (call it once
// the sources were read; it is never nil).
func (c *Checkpoint) KeyedSources(ctx context.Context, uid string) (srcs []state.RestoreSource, release func() error, err error) {
	md := c.Metadata.Operator(uid)
	var releases []func() error
	release = func() error {
		var errs []error
		for _, r := range releases {
			errs = append(errs, r())
		}
		return errors.Join(errs...)
	}
	if md == nil {
		return nil, release, nil
	}
	for _, st := range sortedSubtasks(md) {
		src, rel, err := c.KeyedSource(ctx, md, st)
		if err != nil {
			return nil, release, errors.Join(fmt.Errorf("operator %s subtask %d: %w", uid, st.Subtask, err), release())
		}
		if rel != nil {
			srcs = append(srcs, src)
			releases = append(releases, rel)
		}
	}
	return srcs, release, nil
}

// KeyedSource returns subtask st of operator md (one of the checkpoint's)
// as a canonical keyed file, with the function that releases it; a nil
// release says the subtask holds no keyed state. A canonical keyed file
// is read from storage as it is. An incremental store is fetched under
// TempDir, written out as a canonical file beside it, and removed at once,
// so that reading a large operator holds one store at a time on local
// disk.
func (c *Checkpoint) KeyedSource(ctx context.Context, md *checkpoint.OperatorState, st checkpoint.SubtaskStateEntry) (state.RestoreSource, func() error, error) {
	all := keygroup.Range{Start: 0, End: max(md.MaxParallelism, 1)}
	if h := st.State.Keyed; h != nil {
		// Blocks of key groups beyond max parallelism would be a damaged
		// handle: name them rather than skip them.
		for _, kgo := range h.KeyGroups {
			if !all.Contains(kgo.KeyGroup) {
				return state.RestoreSource{}, nil, fmt.Errorf("state file %s: key group %d outside [0, %d): %w", h.File.Path, kgo.KeyGroup, all.End, storage.ErrCorrupt)
			}
		}
		file := h.File
		return state.RestoreSource{
			Name: file.Path, Size: file.Size, KeyGroups: h.KeyGroups,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return c.fs.OpenFile(ctx, file) },
		}, func() error { return nil }, nil
	}
	h := st.State.Incremental
	if h == nil {
		return state.RestoreSource{}, nil, nil
	}
	if h.KeyGroupStart < 0 || h.KeyGroupEnd > all.End {
		return state.RestoreSource{}, nil, fmt.Errorf("incremental store %s: key groups [%d, %d) outside [0, %d): %w", h.StoreID, h.KeyGroupStart, h.KeyGroupEnd, all.End, storage.ErrCorrupt)
	}
	tmp := c.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	name := fmt.Sprintf("%s-%d", md.UID, st.Subtask)
	err := os.MkdirAll(tmp, 0o755)
	var dir string
	if err == nil {
		dir, err = os.MkdirTemp(tmp, "weir-canonical-"+checkpoint.FileNamePart(name)+"-")
	}
	if err != nil {
		return state.RestoreSource{}, nil, fmt.Errorf("incremental store %s: %w; give a writable folder for the store's copy", h.StoreID, err)
	}
	release := func() error { return os.RemoveAll(dir) }
	src, err := writeCanonical(ctx, lsm.IncrementalSource{Handle: h, Files: c.fs}, tmp, name, dir)
	if err != nil {
		return src, nil, errors.Join(fmt.Errorf("incremental store %s: %w", h.StoreID, err), release())
	}
	return src, release, nil
}

// writeCanonical fetches the store of src under tmp, writes it as a
// canonical file into dir and removes the store.
func writeCanonical(ctx context.Context, src lsm.IncrementalSource, tmp, name, dir string) (_ state.RestoreSource, err error) {
	store, err := lsm.OpenStore(ctx, src, lsm.Options{Dir: tmp, Name: name})
	if err != nil {
		return state.RestoreSource{}, err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	path := filepath.Join(dir, "keyed")
	f, err := os.Create(path)
	if err != nil {
		return state.RestoreSource{}, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	offsets, err := store.WriteBlocks(ctx, bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return state.RestoreSource{}, fmt.Errorf("write %s: %w", path, err)
	}
	size := int64(0)
	if n := len(offsets); n > 0 {
		size = offsets[n-1].Offset + offsets[n-1].Length
	}
	return state.RestoreSource{
		Name: fmt.Sprintf("store %s (written out as %s)", src.Handle.StoreID, path), Size: size, KeyGroups: offsets,
		Open: func(context.Context) (io.ReadCloser, error) { return os.Open(path) },
	}, nil
}

// scanIncremental lists the states of an incremental operator without a
// state table: keyed states from each store's catalogue, timers from the
// sections of its timers file.
func (c *Checkpoint) scanIncremental(ctx context.Context, op *Operator, add func(scope, name string, k state.Kind)) error {
	all := keygroup.Range{Start: 0, End: max(op.MaxParallelism, 1)}
	for _, st := range sortedSubtasks(op.md) {
		h := st.State.Incremental
		if h == nil {
			continue
		}
		for _, ss := range h.States {
			add(checkpoint.ScopeKeyed, ss.Name, state.Kind(ss.Kind))
		}
		if h.Timers == nil {
			continue
		}
		f := h.Timers.File
		src := state.RestoreSource{Name: f.Path, Size: f.Size, KeyGroups: h.Timers.KeyGroups,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return c.fs.OpenFile(ctx, f) }}
		err := state.ForEachBlock(ctx, []state.RestoreSource{src}, all, func(kg int, blk []byte) error {
			return state.ParseBlock(kg, blk, func(name string, k state.Kind, _ []byte) error {
				add(checkpoint.ScopeTimers, name, k)
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("operator %s subtask %d: timers: %w", op.UID, st.Subtask, err)
		}
	}
	return nil
}

// Entry is one entry of a state. Its byte slices alias the reader's
// buffers and are valid only until the iteration continues.
type Entry struct {
	State    *State
	Subtask  int
	KeyGroup int // -1 for operator list state
	// Key is the encoded key (keyed state and timers).
	Key []byte
	// UserKey is a map state entry's encoded user key.
	UserKey []byte
	// Value is a value or reducing state's value, a map state entry's
	// value, or an operator list element.
	Value []byte
	// Elements are a list state's elements.
	Elements [][]byte
	// Timestamp is the timer's time, or the TTL timestamp (milliseconds)
	// of Value when the state has TTL; Timestamps those of Elements.
	Timestamp  int64
	Timestamps []int64
	// Raw is set instead of the fields above when the state's schemas
	// are unknown: a keyed state's payload in one key group (RawCount
	// entries), or an operator list element.
	Raw      []byte
	RawCount int
}

// Entries iterates the entries of the operator's states that keep
// accepts: keyed states and timers key group by key group, subtask by
// subtask, then operator list state subtask by subtask. An error ends the
// iteration. An incremental operator's subtasks are read one store at a
// time (see Checkpoint.TempDir).
func (c *Checkpoint) Entries(ctx context.Context, op *Operator, keep func(*State) bool) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		all := map[string]*State{}
		keyed := false
		for _, s := range op.States {
			all[sectionKey(s.Scope, s.Name, s.Kind)] = s
			if keep(s) && s.Scope != checkpoint.ScopeOperator {
				keyed = true
			}
		}
		stop := errors.New("stop")
		if keyed {
			err := c.forEachSection(ctx, op, func(subtask, kg int, name string, k state.Kind, payload []byte) error {
				scope := checkpoint.ScopeKeyed
				if name == "" {
					scope = checkpoint.ScopeTimers
				}
				s := all[sectionKey(scope, name, k)]
				if s == nil && op.Known {
					// The data has a section the state table does not
					// describe: a state of another kind than its row, or
					// none.
					if other := stateNamed(op, scope, name); other != nil {
						if !keep(other) {
							return nil
						}
						return fmt.Errorf("key group %d: %s is %s in the data and %s in the state table: %w", kg, label(other), k, other.Kind, storage.ErrCorrupt)
					}
					if keep(&State{Operator: op.UID, Name: name, Scope: scope, Kind: k}) {
						return fmt.Errorf("key group %d: %s section %q has no row in the operator's state table: %w", kg, k, name, storage.ErrCorrupt)
					}
				}
				if s == nil || !keep(s) {
					return nil
				}
				if !s.Known {
					count, _, err := state.ReadCount(payload)
					if err != nil {
						return err
					}
					if !yield(Entry{State: s, Subtask: subtask, KeyGroup: kg, Raw: payload, RawCount: count}, nil) {
						return stop
					}
					return nil
				}
				return splitEntries(s, payload, func(e Entry) bool {
					e.Subtask, e.KeyGroup = subtask, kg
					return yield(e, nil)
				}, stop)
			})
			if errors.Is(err, stop) {
				return
			}
			if err != nil {
				yield(Entry{}, err)
				return
			}
		}
		subtasks := slices.Clone(op.md.Subtasks)
		sort.SliceStable(subtasks, func(i, j int) bool { return subtasks[i].Subtask < subtasks[j].Subtask })
		for _, st := range subtasks {
			names := make([]string, 0, len(st.State.Operator))
			for name := range st.State.Operator {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				s := all[sectionKey(checkpoint.ScopeOperator, name, 0)]
				if s == nil {
					if keep(&State{Operator: op.UID, Name: name, Scope: checkpoint.ScopeOperator}) {
						yield(Entry{}, fmt.Errorf("operator %s subtask %d: operator list state %q has no row in the operator's state table: %w", op.UID, st.Subtask, name, storage.ErrCorrupt))
						return
					}
					continue
				}
				if !keep(s) {
					continue
				}
				for _, elem := range st.State.Operator[name] {
					e := Entry{State: s, Subtask: st.Subtask, KeyGroup: -1}
					if s.Known {
						e.Value = elem
					} else {
						e.Raw, e.RawCount = elem, 1
					}
					if !yield(e, nil) {
						return
					}
				}
			}
		}
	}
}

func sectionKey(scope, name string, k state.Kind) string {
	if scope == checkpoint.ScopeOperator {
		k = 0
	}
	return fmt.Sprintf("%s/%s/%d", scope, name, k)
}

// stateNamed finds the operator's state of scope and name, whatever its
// kind (for timers: any timer state, the kind tells them apart).
func stateNamed(op *Operator, scope, name string) *State {
	for _, s := range op.States {
		if s.Scope == scope && s.Name == name && scope != checkpoint.ScopeTimers {
			return s
		}
	}
	return nil
}

// splitEntries splits one key group's payload of s into entries by the
// schemas: uvarint(#keys), then per key the key and the state (a value;
// a list: uvarint(#elements) and the elements; a map: uvarint(#entries)
// and (user key, value) pairs; timers: the timestamp only), where each
// value of a TTL state is zigzag-varint(timestamp) then the value.
func splitEntries(s *State, payload []byte, yield func(Entry) bool, stop error) error {
	count, n, err := state.ReadCount(payload)
	if err != nil {
		return err
	}
	r := payload[n:]
	bad := func(what string, err error) error {
		return fmt.Errorf("%s: %w", what, state.AsCorrupt(err))
	}
	take := func(skip func([]byte) (int, error), what string) ([]byte, error) {
		m, err := skip(r)
		if err != nil {
			return nil, bad(what, err)
		}
		b := r[:m]
		r = r[m:]
		return b, nil
	}
	varint := func(what string) (int64, error) {
		v, m := binary.Varint(r)
		if m <= 0 {
			return 0, fmt.Errorf("%s: bad varint: %w", what, codec.ErrCorrupt)
		}
		r = r[m:]
		return v, nil
	}
	stamped := func(what string) (ts int64, v []byte, err error) {
		if s.TTL() {
			if ts, err = varint(what + " TTL timestamp"); err != nil {
				return 0, nil, err
			}
		}
		v, err = take(s.skipValue, what)
		return ts, v, err
	}
	for i := range count {
		key, err := take(s.skipKey, fmt.Sprintf("key %d", i))
		if err != nil {
			return err
		}
		e := Entry{State: s, Key: key}
		switch {
		case s.Scope == checkpoint.ScopeTimers:
			if e.Timestamp, err = varint("timer timestamp"); err != nil {
				return err
			}
		case s.Kind.Base() == state.KindList:
			elems, m, err := state.ReadCount(r)
			if err != nil {
				return bad("list length", err)
			}
			r = r[m:]
			for j := range elems {
				ts, v, err := stamped(fmt.Sprintf("list element %d", j))
				if err != nil {
					return err
				}
				e.Elements = append(e.Elements, v)
				if s.TTL() {
					e.Timestamps = append(e.Timestamps, ts)
				}
			}
		case s.Kind.Base() == state.KindMap:
			entries, m, err := state.ReadCount(r)
			if err != nil {
				return bad("map length", err)
			}
			r = r[m:]
			for j := range entries {
				uk, err := take(s.skipUserKey, fmt.Sprintf("map entry %d user key", j))
				if err != nil {
					return err
				}
				me := Entry{State: s, Key: key, UserKey: uk}
				if me.Timestamp, me.Value, err = stamped(fmt.Sprintf("map entry %d value", j)); err != nil {
					return err
				}
				if !yield(me) {
					return stop
				}
			}
			continue
		default: // value, reducing
			if e.Timestamp, e.Value, err = stamped("value"); err != nil {
				return err
			}
		}
		if !yield(e) {
			return stop
		}
	}
	if len(r) != 0 {
		return fmt.Errorf("%d bytes after the last of %d keys: %w", len(r), count, codec.ErrCorrupt)
	}
	return nil
}

// TwoPhaseTxn is a pending transaction of a two-phase-commit sink.
type TwoPhaseTxn struct {
	Checkpoint int64
	Txn        []byte // the handle's codec bytes
}

// TwoPhase splits an element of a two-phase-commit sink's operator list
// state ("two-phase-commit") into its pending transactions and its open
// one, whose handles are encoded under the state's Value schema.
func TwoPhase(elem []byte) (pending []TwoPhaseTxn, open []byte, hasOpen bool, err error) {
	st, err := twophase.DecodeState[[]byte](elem, rawTxn{})
	if err != nil {
		return nil, nil, false, err
	}
	for _, p := range st.Pending {
		pending = append(pending, TwoPhaseTxn{Checkpoint: int64(p.ID), Txn: p.Txn})
	}
	return pending, st.Current, st.HasCurrent, nil
}

// TwoPhaseStateName is the operator list state of two-phase-commit sinks.
const TwoPhaseStateName = "two-phase-commit"

type rawTxn struct{}

func (rawTxn) Encode(b []byte) ([]byte, error) { return b, nil }
func (rawTxn) Decode(b []byte) ([]byte, error) { return b, nil }

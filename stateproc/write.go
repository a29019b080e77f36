package stateproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// Writer builds a new savepoint from Go values.
type Writer struct {
	maxP int
	ops  []operatorWriter
	kept []kept
	err  error
}

// kept is an operator carried over from a savepoint as it is.
type kept struct {
	from *Savepoint
	op   checkpoint.OperatorState
}

// Keep carries the operators keep (uids) of savepoint s into the written
// savepoint as they are, byte for byte: their keyed state files are
// copied, their operator list state (source positions, pending sink
// transactions) and state table kept. Use it for every operator a
// transformation leaves alone, so that a job restoring the written
// savepoint resumes them (a source where it stopped) instead of starting
// them empty. An operator of an incremental (lsm) checkpoint is kept with
// its keyed state written out from its stores as the keyed files a
// savepoint of the job holds (see TempDir).
func (w *Writer) Keep(s *Savepoint, keep ...string) error {
	for _, uid := range keep {
		op := s.md.Operator(uid)
		if op == nil {
			return fmt.Errorf("keep operator %q: %s has no such operator (it holds %s)", uid, s.path, uids(s.md))
		}
		if op.MaxParallelism != 0 && op.MaxParallelism != w.maxP {
			return fmt.Errorf("keep operator %q: it was checkpointed with max parallelism %d, the writer's is %d: keyed state keeps its key groups, so they must be equal", uid, op.MaxParallelism, w.maxP)
		}
		for _, st := range op.Subtasks {
			if st.State.Channels != nil || st.State.Weak != nil {
				return fmt.Errorf("keep operator %q: %s holds in-flight records (an unaligned checkpoint) or weak-mode positions, which a savepoint cannot carry; take a savepoint of the job and keep from that", uid, s.path)
			}
		}
		for _, k := range w.kept {
			if k.op.UID == uid {
				return fmt.Errorf("keep operator %q: kept twice", uid)
			}
		}
		w.kept = append(w.kept, kept{from: s, op: *op})
	}
	return nil
}

// NewWriter returns a writer of a savepoint for a job with the given max
// parallelism (pipeline.max-parallelism; weir's default is 128): keyed
// state is split into that many key groups, and a job restores it only
// with the same max parallelism.
func NewWriter(maxParallelism int) *Writer { return &Writer{maxP: maxParallelism} }

// operatorWriter is a written operator: keyed of any key type, or one
// with operator list state only.
type operatorWriter interface {
	uid() string
	parallelism() int
	// snapshot writes subtask i's state with write and returns its
	// handle and schema rows.
	subtasks() int
	write(ctx context.Context, i int, fs *storage.FS, id checkpoint.ID) (checkpoint.OperatorSubtaskState, error)
}

// KeyedWriter writes the keyed state of one operator with key K, and its
// timers and operator list state.
type KeyedWriter[K comparable] struct {
	w        *Writer
	id       string
	p        int
	hash     func(K) uint32
	backends []*state.KeyedBackend[K]
	ls       operatorLists
}

// KeyedOperator adds the keyed operator uid, restored at the given
// parallelism, to the savepoint. Each operator is added once: write all
// its states through the writer returned.
func KeyedOperator[K comparable](w *Writer, uid string, parallelism int) *KeyedWriter[K] {
	op := &KeyedWriter[K]{w: w, id: uid, p: parallelism}
	kc, err := codec.For[K]()
	if err == nil {
		op.hash, err = keygroup.Hasher[K]()
	}
	if err == nil {
		err = w.checkNew(uid, parallelism)
	}
	if err != nil {
		w.fail(fmt.Errorf("operator %q: %w", uid, err))
		return op
	}
	for i := range parallelism {
		b := state.NewHashedKeyedBackend(kc, keygroup.RangeFor(w.maxP, parallelism, i), w.maxP, op.hash)
		b.SetTTLClock(func() int64 { return time.Now().UnixMilli() })
		op.backends = append(op.backends, b)
	}
	op.ls = newOperatorLists(parallelism)
	w.ops = append(w.ops, op)
	return op
}

// checkNew checks a new operator's uid and parallelism.
func (w *Writer) checkNew(uid string, parallelism int) error {
	if parallelism < 1 || parallelism > w.maxP {
		return fmt.Errorf("parallelism %d outside [1, max parallelism %d]", parallelism, w.maxP)
	}
	for _, op := range w.ops {
		if op.uid() == uid {
			return fmt.Errorf("added twice; write all of its states through the writer the first KeyedOperator or NonKeyedOperator call returned")
		}
	}
	return nil
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// backend returns the subtask backend owning k, made current for k.
func (op *KeyedWriter[K]) backend(k K) *state.KeyedBackend[K] {
	h := op.hash(k)
	kg := keygroup.Of(h, op.w.maxP)
	for _, b := range op.backends {
		if b.KeyGroups().Contains(kg) {
			b.SetCurrentKeyHash(k, h, kg)
			return b
		}
	}
	panic(fmt.Sprintf("stateproc: key group %d outside every subtask's range", kg)) // RangeFor covers [0, maxP)
}

// WriteValues writes the value state name with one value per key.
func WriteValues[K comparable, V any](op *KeyedWriter[K], name string, values map[K]V) error {
	if op.backends == nil {
		return op.w.err
	}
	vc, err := codec.For[V]()
	if err != nil {
		return err
	}
	for k, v := range values {
		st, err := state.RegisterValue(op.backend(k), name, vc)
		if err != nil {
			return fmt.Errorf("operator %q: %w", op.id, err)
		}
		st.Update(v)
	}
	return op.registerEverywhere(func(b *state.KeyedBackend[K]) error {
		_, err := state.RegisterValue(b, name, vc)
		return err
	})
}

// WriteLists writes the list state name with one list per key.
func WriteLists[K comparable, V any](op *KeyedWriter[K], name string, lists map[K][]V) error {
	if op.backends == nil {
		return op.w.err
	}
	vc, err := codec.For[V]()
	if err != nil {
		return err
	}
	for k, vs := range lists {
		st, err := state.RegisterList(op.backend(k), name, vc)
		if err != nil {
			return fmt.Errorf("operator %q: %w", op.id, err)
		}
		st.Update(vs)
	}
	return op.registerEverywhere(func(b *state.KeyedBackend[K]) error {
		_, err := state.RegisterList(b, name, vc)
		return err
	})
}

// WriteMaps writes the map state name with one map per key.
func WriteMaps[K, UK comparable, UV any](op *KeyedWriter[K], name string, entries map[K]map[UK]UV) error {
	if op.backends == nil {
		return op.w.err
	}
	kc, err := codec.For[UK]()
	if err != nil {
		return err
	}
	vc, err := codec.For[UV]()
	if err != nil {
		return err
	}
	for k, m := range entries {
		st, err := state.RegisterMap(op.backend(k), name, kc, vc)
		if err != nil {
			return fmt.Errorf("operator %q: %w", op.id, err)
		}
		for uk, uv := range m {
			st.Put(uk, uv)
		}
	}
	return op.registerEverywhere(func(b *state.KeyedBackend[K]) error {
		_, err := state.RegisterMap(b, name, kc, vc)
		return err
	})
}

// registerEverywhere registers a state on every subtask, so that each
// subtask's table has its row even where it holds no key of it.
func (op *KeyedWriter[K]) registerEverywhere(register func(*state.KeyedBackend[K]) error) error {
	for _, b := range op.backends {
		if err := register(b); err != nil {
			return fmt.Errorf("operator %q: %w", op.id, err)
		}
	}
	return nil
}

func (op *KeyedWriter[K]) uid() string      { return op.id }
func (op *KeyedWriter[K]) parallelism() int { return op.p }
func (op *KeyedWriter[K]) subtasks() int    { return len(op.backends) }

func (op *KeyedWriter[K]) write(ctx context.Context, i int, fs *storage.FS, id checkpoint.ID) (checkpoint.OperatorSubtaskState, error) {
	b := op.backends[i]
	snap := b.Snapshot()
	defer snap.Release()
	var offsets []checkpoint.KeyGroupOffset
	f, err := fs.WriteFile(ctx, id, checkpoint.SubtaskFileName(op.id, i, "keyed"), func(w io.Writer) error {
		var err error
		offsets, err = snap.WriteBlocks(w)
		return err
	})
	if err != nil {
		return checkpoint.OperatorSubtaskState{}, err
	}
	st := checkpoint.OperatorSubtaskState{UID: op.id, Keyed: &checkpoint.KeyedStateHandle{File: f, KeyGroups: offsets}, Schemas: b.Schemas()}
	return st, op.ls.snapshot(i, &st)
}

// WriteEventTimers registers event-time timers per key: a job restoring
// the savepoint calls the operator's OnTimer with the key current (its
// TimeDomain EventTime) once the watermark reaches each time, in Unix
// milliseconds, as for a timer the function registered before the
// savepoint (Flink's bootstrap functions register timers the same way).
// One key's equal times are one timer.
func WriteEventTimers[K comparable](op *KeyedWriter[K], timers map[K][]int64) error {
	return op.writeTimers(timers, (*state.KeyedBackend[K]).EventTimers)
}

// WriteProcessingTimers registers processing-time timers per key, fired
// when the restored job's clock reaches each time (Unix milliseconds); a
// time already past fires soon after the job starts.
func WriteProcessingTimers[K comparable](op *KeyedWriter[K], timers map[K][]int64) error {
	return op.writeTimers(timers, (*state.KeyedBackend[K]).Timers)
}

func (op *KeyedWriter[K]) writeTimers(timers map[K][]int64, set func(*state.KeyedBackend[K]) *state.Timers[K]) error {
	if op.backends == nil {
		return op.w.err
	}
	for k, tss := range timers {
		b := op.backend(k)
		for _, ts := range tss {
			set(b).Register(ts)
		}
	}
	return nil
}

// Write writes the savepoint into a new folder under dir and returns the
// path to restore from (a chk-1 folder).
func (w *Writer) Write(ctx context.Context, dir string) (string, error) {
	if w.err != nil {
		return "", fmt.Errorf("write savepoint: %w", w.err)
	}
	name := fmt.Sprintf("savepoint-%x", time.Now().UnixNano())
	fs, err := storage.Open(dir, name)
	if err != nil {
		return "", err
	}
	const id = checkpoint.ID(1)
	md := &checkpoint.Metadata{JobID: name, ID: id, Kind: checkpoint.Savepoint, Timestamp: time.Now()}
	for _, op := range w.ops {
		for _, k := range w.kept {
			if k.op.UID == op.uid() {
				return "", fmt.Errorf("write savepoint: operator %q is both written and kept", op.uid())
			}
		}
		st := checkpoint.OperatorState{UID: op.uid(), Parallelism: op.parallelism(), MaxParallelism: w.maxP}
		rows := map[string]checkpoint.StateSchema{}
		for i := range op.subtasks() {
			sub, err := op.write(ctx, i, fs, id)
			if err != nil {
				return "", fmt.Errorf("write savepoint operator %q: %w", op.uid(), err)
			}
			for _, r := range sub.Schemas {
				rows[fmt.Sprintf("%s/%s/%d", r.Scope, r.Name, r.Kind)] = r
			}
			sub.Schemas = nil
			st.Subtasks = append(st.Subtasks, checkpoint.SubtaskStateEntry{Subtask: i, State: sub})
		}
		for _, k := range slices.Sorted(maps.Keys(rows)) {
			st.States = append(st.States, rows[k])
		}
		md.Operators = append(md.Operators, st)
	}
	for _, k := range w.kept {
		op, err := copyOperator(ctx, k, fs, id)
		if err != nil {
			return "", fmt.Errorf("write savepoint: keep operator %q: %w", k.op.UID, err)
		}
		md.Operators = append(md.Operators, op)
	}
	if _, err := fs.WriteMetadata(ctx, md); err != nil {
		return "", fmt.Errorf("write savepoint: %w", err)
	}
	return fmt.Sprintf("%s/chk-%d", fs.JobDir(), id), nil
}

// copyOperator copies a kept operator's keyed state files into the new
// savepoint and returns its state with their new handles. A canonical
// keyed file is copied byte for byte; an incremental store is written as
// the canonical file a savepoint of the job holds instead (its key-group
// index that of the written file), since a savepoint owns its files and
// restores on either backend.
func copyOperator(ctx context.Context, k kept, fs *storage.FS, id checkpoint.ID) (checkpoint.OperatorState, error) {
	op := k.op
	op.Subtasks = slices.Clone(op.Subtasks)
	for i, st := range op.Subtasks {
		src, release, err := k.from.cp.KeyedSource(ctx, &k.op, st)
		if err != nil {
			return op, fmt.Errorf("subtask %d: %w", st.Subtask, err)
		}
		if release == nil {
			continue
		}
		f, err := fs.WriteFile(ctx, id, checkpoint.SubtaskFileName(op.UID, st.Subtask, "keyed"), func(w io.Writer) error {
			r, err := src.Open(ctx)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, r)
			return errors.Join(err, r.Close())
		})
		if err = errors.Join(err, release()); err != nil {
			return op, fmt.Errorf("subtask %d: %w", st.Subtask, err)
		}
		op.Subtasks[i].State.Keyed = &checkpoint.KeyedStateHandle{File: f, KeyGroups: src.KeyGroups}
		op.Subtasks[i].State.Incremental = nil
	}
	return op, nil
}

// OperatorWriter writes the operator list state of an operator without
// keyed state, such as a source's position.
type OperatorWriter struct {
	w  *Writer
	id string
	p  int
	ls operatorLists
}

// NonKeyedOperator adds operator uid, restored at the given parallelism,
// with operator list state only (a source, a sink); a keyed operator's
// list states are written through its KeyedWriter. Each operator is added
// once.
func NonKeyedOperator(w *Writer, uid string, parallelism int) *OperatorWriter {
	op := &OperatorWriter{w: w, id: uid, p: parallelism}
	if err := w.checkNew(uid, parallelism); err != nil {
		w.fail(fmt.Errorf("operator %q: %w", uid, err))
		return op
	}
	op.ls = newOperatorLists(parallelism)
	w.ops = append(w.ops, op)
	return op
}

func (op *OperatorWriter) uid() string      { return op.id }
func (op *OperatorWriter) parallelism() int { return op.p }
func (op *OperatorWriter) subtasks() int    { return len(op.ls.backends) }

func (op *OperatorWriter) write(_ context.Context, i int, _ *storage.FS, _ checkpoint.ID) (checkpoint.OperatorSubtaskState, error) {
	st := checkpoint.OperatorSubtaskState{UID: op.id}
	return st, op.ls.snapshot(i, &st)
}

// ListWriter is an operator whose operator list state can be written:
// an *OperatorWriter, or a *KeyedWriter for a keyed operator's own.
type ListWriter interface {
	lists() (*operatorLists, string, *Writer)
}

func (op *OperatorWriter) lists() (*operatorLists, string, *Writer) { return &op.ls, op.id, op.w }
func (op *KeyedWriter[K]) lists() (*operatorLists, string, *Writer) { return &op.ls, op.id, op.w }

// unionPrefix is runtime.UnionStatePrefix: a list state of this name
// prefix restores to every subtask whole (GetUnionListState), any other
// one is dealt out round-robin when the parallelism changes.
const unionPrefix = "union/"

// WriteOperatorList writes the operator list state name
// (weir.GetOperatorListState) of op: the elements of subtask i are
// perSubtask[i], for as many subtasks as given (at most the operator's
// parallelism; the others get an empty list). A job restoring at the same
// parallelism gives subtask i its elements; at another one the elements
// are dealt out round-robin, as for a savepoint the job took. A source's
// position is the usual case: stateproc.WriteOperatorList(op, "pos",
// [][]int64{{1000}}).
func WriteOperatorList[T any](op ListWriter, name string, perSubtask [][]T) error {
	if strings.HasPrefix(name, unionPrefix) {
		return fmt.Errorf("operator list state %q: the name prefix %q marks union list state; write it with WriteUnionList and the name without the prefix", name, unionPrefix)
	}
	return writeLists(op, name, perSubtask)
}

// WriteUnionList writes the union list state name (weir.GetUnionListState)
// of op, per subtask as WriteOperatorList does. A restored job hands every
// subtask the elements of all subtasks, whatever its parallelism, so how
// they are split here does not matter to it: [][]T{all} will do. Sources
// that assign partitions by parallelism (Kafka) keep their offsets so.
func WriteUnionList[T any](op ListWriter, name string, perSubtask [][]T) error {
	return writeLists(op, unionPrefix+name, perSubtask)
}

func writeLists[T any](op ListWriter, name string, perSubtask [][]T) error {
	ls, uid, w := op.lists()
	if ls.backends == nil {
		return w.err
	}
	if len(perSubtask) > len(ls.backends) {
		return fmt.Errorf("operator %q: operator list state %q: %d subtasks' elements for parallelism %d; give at most one list per subtask", uid, name, len(perSubtask), len(ls.backends))
	}
	if ls.names[name] {
		return fmt.Errorf("operator %q: operator list state %q written twice; give all its elements in one call", uid, name)
	}
	c, err := codec.For[T]()
	if err != nil {
		return fmt.Errorf("operator %q: operator list state %q: %w", uid, name, err)
	}
	// Every subtask registers it, as every subtask of a running operator
	// does, so each has the state (empty or not) and its schema row.
	for i, b := range ls.backends {
		l, err := state.RegisterOperatorList(b, name, c)
		if err != nil {
			return fmt.Errorf("operator %q: %w", uid, err)
		}
		if i < len(perSubtask) {
			l.Update(perSubtask[i])
		}
	}
	ls.names[name] = true
	return nil
}

// operatorLists are an operator's list states per subtask, in the
// operator backend a running operator keeps them in, so that the
// elements and schema rows written are the ones the runtime writes.
type operatorLists struct {
	backends []*state.OperatorBackend
	names    map[string]bool
}

func newOperatorLists(parallelism int) operatorLists {
	ls := operatorLists{names: map[string]bool{}}
	for range parallelism {
		ls.backends = append(ls.backends, state.NewOperatorBackend())
	}
	return ls
}

// snapshot adds subtask i's list states and their rows to st.
func (ls *operatorLists) snapshot(i int, st *checkpoint.OperatorSubtaskState) error {
	if len(ls.names) == 0 {
		return nil
	}
	b := ls.backends[i]
	m, err := b.Snapshot()
	if err != nil {
		return err
	}
	st.Operator = m
	st.Schemas = append(st.Schemas, b.Schemas()...)
	return nil
}

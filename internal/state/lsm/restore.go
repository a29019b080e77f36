package lsm

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

// loadBatchSize bounds how many bytes a restore batches before it commits
// them. The bound in use is an eighth of the memtable (loader.limit):
// Pebble turns a batch of half a memtable or more into a memtable of its
// own, held in Go memory until flushed, and each such commit rotates the
// memtable — a restore in 8 MiB batches into 16 MiB memtables did that for
// every batch and needed 140 MiB of RSS more than the budget.
const loadBatchSize = 8 << 20

// Restore loads the blocks of the backend's own key groups from canonical
// checkpoint files, written by either backend and by any number of old
// subtasks. Files are streamed a block at a time (state.ForEachBlock) and
// written into the store through small batches (loader.limit), so a restore
// holds neither a file nor the state in Go memory. Both timer sets are
// restored at once. Entries of the canonical format carry no lengths, so splitting a
// state's payload needs its codecs: the payloads of states not registered
// yet are staged in the store (stage.go) and decoded when the state is
// registered. After an error the backend holds part of the checkpoint and
// must be closed.
func (b *Backend[K]) Restore(ctx context.Context, sources []state.RestoreSource) error {
	b.dropBuffer() // the loader writes the store directly
	l := b.newLoader()
	defer l.close()
	err := state.ForEachBlock(ctx, sources, b.kgs, func(kg int, blk []byte) error {
		return state.ParseBlock(kg, blk, func(name string, k state.Kind, payload []byte) error {
			switch k {
			case state.KindTimers:
				return b.timers.RestoreGroup(kg, payload)
			case state.KindEventTimers:
				return b.events.RestoreGroup(kg, payload)
			}
			if r, ok := b.states[name]; ok {
				if r.spec.Kind != k {
					return fmt.Errorf("checkpoint holds %s but it is registered as %s; keep the kind or use another name: %w", k, r.spec.Desc, state.ErrStateMismatch)
				}
				return l.group(r, kg, payload)
			}
			p, ok := b.pending[name]
			if !ok {
				p = &pendingState{kind: k}
				b.pending[name] = p
			}
			if p.kind != k {
				return fmt.Errorf("checkpoint holds it both as %s and as %s: %w", p.kind, k, codec.ErrCorrupt)
			}
			return l.stage(name, kg, payload)
		})
	})
	if err == nil {
		err = l.flush()
	}
	b.timers.Rebuild()
	b.events.Rebuild()
	return err
}

// loader writes canonical payloads into the store through batches.
type loader[K comparable] struct {
	b      *Backend[K]
	batch  *pebble.Batch
	key    []byte
	frames []byte
	// convK and convV hold the last converted user key and value (take).
	convK, convV []byte
	limit        int // batch bytes that make set commit
}

func (b *Backend[K]) newLoader() *loader[K] {
	return &loader[K]{b: b, batch: b.db.NewBatch(), limit: int(min(loadBatchSize, max(b.opts.MemtableSize/8, 64<<10)))}
}

func (l *loader[K]) close() { l.batch.Close() }

func (l *loader[K]) flush() error {
	if l.batch.Empty() {
		return nil
	}
	if err := l.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("write restored state: %w", err)
	}
	l.batch.Reset()
	return nil
}

func (l *loader[K]) set(key, v []byte) error {
	if err := l.batch.Set(key, v, nil); err != nil {
		return err
	}
	if l.batch.Len() >= l.limit {
		return l.flush()
	}
	return nil
}

// group writes one key group's payload of state r.
func (l *loader[K]) group(r *registration, kg int, payload []byte) error {
	count, n, err := state.ReadCount(payload)
	if err != nil {
		return err
	}
	src := payload[n:]
	spec := r.spec
	for range count {
		_, kn, err := l.b.keys.Decode(src)
		if err != nil {
			return state.AsCorrupt(fmt.Errorf("key: %w", err))
		}
		l.key = appendKey(l.key[:0], kg, r.sid, src[:kn], nil)
		src = src[kn:]
		switch spec.Kind.Base() {
		case state.KindValue, state.KindReducing:
			var v []byte
			if v, src, err = l.take(spec.ValueLen, spec.Convert, &l.convV, src, "value"); err != nil {
				return err
			}
			err = l.set(l.key, v)
		case state.KindList:
			var elems int
			if elems, n, err = state.ReadCount(src); err != nil {
				return err
			}
			src = src[n:]
			l.frames = l.frames[:0]
			for range elems {
				var e []byte
				if e, src, err = l.take(spec.ValueLen, spec.Convert, &l.convV, src, "list element"); err != nil {
					return err
				}
				l.frames = state.AppendFrame(l.frames, e)
			}
			err = l.set(l.key, l.frames)
		case state.KindMap:
			var entries int
			if entries, n, err = state.ReadCount(src); err != nil {
				return err
			}
			src = src[n:]
			prefix := len(l.key)
			for range entries {
				var uk, v []byte
				if uk, src, err = l.take(spec.UserKeyLen, spec.ConvertUserKey, &l.convK, src, "map key"); err != nil {
					return err
				}
				if v, src, err = l.take(spec.ValueLen, spec.Convert, &l.convV, src, "map value"); err != nil {
					return err
				}
				l.key = appendUserKey(l.key[:prefix], uk)
				if err = l.set(l.key, v); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%d bytes left after %d entries: %w", len(src), count, codec.ErrCorrupt)
	}
	return nil
}

// take cuts the first encoded value off src, as split does, or, when the
// state's values are converted (StateSpec.Convert), converts it into *buf
// and returns the converted bytes, valid until the next take into buf.
func (l *loader[K]) take(lenOf func([]byte) (int, error), convert func(dst, src []byte) ([]byte, int, error), buf *[]byte, src []byte, what string) (head, rest []byte, err error) {
	if convert == nil {
		return split(lenOf, src, what)
	}
	out, n, err := convert((*buf)[:0], src)
	if err != nil {
		return nil, nil, state.AsCorrupt(fmt.Errorf("%s: %w", what, err))
	}
	if n < 0 || n > len(src) {
		return nil, nil, fmt.Errorf("%s: length %d outside the %d bytes left: %w", what, n, len(src), codec.ErrCorrupt)
	}
	*buf = out
	return out, src[n:], nil
}

// split cuts the encoding that lenOf measures off the front of src.
func split(lenOf func([]byte) (int, error), src []byte, what string) (head, rest []byte, err error) {
	n, err := lenOf(src)
	if err != nil {
		return nil, nil, state.AsCorrupt(fmt.Errorf("%s: %w", what, err))
	}
	if n < 0 || n > len(src) {
		return nil, nil, fmt.Errorf("%s: length %d outside the %d bytes left: %w", what, n, len(src), codec.ErrCorrupt)
	}
	return src[:n], src[n:], nil
}

package lsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

// migrate rewrites the entries of state r, restored from store files under
// id r.sid and written under an older schema of its types, into the
// program's encoding under the fresh id sid (StateSpec.Convert and
// ConvertUserKey), drops the old id's entries, and makes sid the state's.
//
// A canonical restore converts values as it loads them (loader.take); a
// store linked from an incremental checkpoint's files holds them as they
// were written, so they are converted here, once, at registration: the
// store then never holds two encodings of a state, and reads, snapshots
// and TTL sweeps stay unaware of evolution. The rewrite goes under a fresh
// id because a converted map user key may equal an unconverted one met
// later in the same pass. Only migrated states pay; the next incremental
// checkpoint uploads their new files once, as after a rescale.
func (b *Backend[K]) migrate(r *registration, sid uint16) error {
	if sid == maxStates {
		return fmt.Errorf("register state %q: an operator may have at most %d keyed states", r.spec.Name, maxStates)
	}
	l := b.newLoader()
	defer l.close()
	var lo, hi, key []byte
	for kg := b.kgs.Start; kg < b.kgs.End; kg++ {
		lo = appendStatePrefix(lo[:0], kg, r.sid)
		hi = appendStatePrefix(hi[:0], kg, r.sid+1)
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return fmt.Errorf("migrate state %q: %w", r.spec.Name, err)
		}
		for it.First(); it.Valid() && err == nil; it.Next() {
			var v []byte
			if v, err = it.ValueAndErr(); err == nil {
				key, err = l.migrateEntry(r.spec, it.Key(), v, kg, sid, key)
			}
		}
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("migrate state %q key group %d: %w", r.spec.Name, kg, err)
		}
		if err := l.batch.DeleteRange(lo, hi, nil); err != nil {
			return fmt.Errorf("migrate state %q: %w", r.spec.Name, err)
		}
	}
	if err := l.flush(); err != nil {
		return fmt.Errorf("migrate state %q: %w", r.spec.Name, err)
	}
	r.sid = sid
	return nil
}

// migrateEntry converts one store entry of the old id into the loader's
// batch under sid; key is scratch space, returned for reuse.
func (l *loader[K]) migrateEntry(spec state.StateSpec, old, v []byte, kg int, sid uint16, key []byte) ([]byte, error) {
	sk, err := parseKey(old)
	if err != nil {
		return key, err
	}
	key = appendKey(key[:0], kg, sid, sk.key, sk.ns)
	switch spec.Kind.Base() {
	case state.KindValue, state.KindReducing:
		if v, err = convertWhole(spec.Convert, &l.convV, v, "value"); err != nil {
			return key, err
		}
	case state.KindList:
		l.frames = l.frames[:0]
		for rest := v; len(rest) > 0; {
			var e []byte
			if e, rest, err = state.NextFrame(rest); err != nil {
				return key, err
			}
			if e, err = convertWhole(spec.Convert, &l.convV, e, "list element"); err != nil {
				return key, err
			}
			l.frames = state.AppendFrame(l.frames, e)
		}
		v = l.frames
	case state.KindMap:
		var uk []byte
		if uk, err = userKey(sk.suffix); err != nil {
			return key, err
		}
		if uk, err = convertWhole(spec.ConvertUserKey, &l.convK, uk, "map key"); err != nil {
			return key, err
		}
		key = appendUserKey(key, uk)
		if v, err = convertWhole(spec.Convert, &l.convV, v, "map value"); err != nil {
			return key, err
		}
	}
	return key, l.set(key, v)
}

// convertWhole converts src, which must be exactly one encoded value; a
// nil convert leaves it as it is.
func convertWhole(convert func(dst, src []byte) ([]byte, int, error), buf *[]byte, src []byte, what string) ([]byte, error) {
	if convert == nil {
		return src, nil
	}
	out, n, err := convert((*buf)[:0], src)
	if err == nil && n != len(src) {
		err = fmt.Errorf("%d bytes after the value: %w", len(src)-n, codec.ErrCorrupt)
	}
	if err != nil {
		return nil, state.AsCorrupt(fmt.Errorf("%s: %w", what, err))
	}
	*buf = out
	return out, nil
}

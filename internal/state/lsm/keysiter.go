package lsm

import (
	"bytes"
	"iter"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/state"
)

// Keys yields the keys with an entry in the state name, key group by key
// group, in canonical order within a group: one range scan per group over
// the store as of the call (later writes are not seen). A map state's
// entries share their key's prefix, so a key is yielded once.
func (b *Backend[K]) Keys(name string) iter.Seq2[K, int] {
	return func(yield func(K, int) bool) {
		r, ok := b.states[name]
		if !ok {
			return
		}
		b.flushBuffer()
		lo := appendStatePrefix(nil, b.kgs.Start, r.sid)
		hi := appendGroupPrefix(nil, b.kgs.End)
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			b.fail(err)
			return
		}
		defer func() {
			if err := it.Close(); err != nil {
				b.fail(err)
			}
		}()
		var last, prefix []byte
		for kg := b.kgs.Start; kg < b.kgs.End; kg++ {
			prefix = appendStatePrefix(prefix[:0], kg, r.sid)
			first := true
			for valid := it.SeekGE(prefix); valid && bytes.HasPrefix(it.Key(), prefix); valid = it.Next() {
				sk, err := parseKey(it.Key())
				if err != nil {
					b.fail(err)
					return
				}
				if !first && bytes.Equal(sk.key, last) {
					continue
				}
				first = false
				last = append(last[:0], sk.key...)
				k, n, err := b.keys.Decode(sk.key)
				if err == nil && n != len(sk.key) {
					err = errBadKey
				}
				if err != nil {
					b.fail(state.AsCorrupt(err))
					return
				}
				if !yield(k, kg) {
					return
				}
			}
		}
	}
}

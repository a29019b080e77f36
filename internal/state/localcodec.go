package state

import (
	"fmt"

	"github.com/weirstream/weir/internal/codec"
)

// localCodec is a state handle's codec on its task goroutine. Codec's
// Append and Decode pass values by value, and a reflective codec (a
// struct's plan) then moves each one to the heap: on the lsm backend a
// window operator paid two allocations per record and window for its
// window key and entry. A PointerCodec encodes from and decodes into tmp,
// a field of the (heap-allocated) handle, instead.
type localCodec[V any] struct {
	c   codec.Codec[V]
	pc  codec.PointerCodec[V]
	tmp V
}

func newLocalCodec[V any](c codec.Codec[V]) localCodec[V] {
	pc, _ := c.(codec.PointerCodec[V])
	return localCodec[V]{c: c, pc: pc}
}

// append appends v's encoding to dst.
func (l *localCodec[V]) append(dst []byte, v V) []byte {
	if l.pc == nil {
		return l.c.Append(dst, v)
	}
	l.tmp = v
	dst = l.pc.AppendFrom(dst, &l.tmp)
	var zero V
	l.tmp = zero // hold no references past the call
	return dst
}

// decodeAll decodes exactly one value from b, as the package's decodeAll.
func (l *localCodec[V]) decodeAll(b []byte) (V, error) {
	if l.pc == nil {
		return decodeAll(l.c, b)
	}
	var zero V
	l.tmp = zero
	n, err := l.pc.DecodeInto(b, &l.tmp)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%d bytes after the value: %w", len(b)-n, codec.ErrCorrupt)
	}
	v := l.tmp
	l.tmp = zero
	if err != nil {
		return zero, asCorrupt(err)
	}
	return v, nil
}

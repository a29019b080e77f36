package weir

import (
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/runtime"
)

// batchCodec stores batches of T as channel state: a uvarint record count,
// then each record in T's codec. Decoded batches come from its own pool, so
// the consuming task recycles them like any batch it polls.
type batchCodec[T any] struct {
	c    codec.Codec[T]
	pool *network.Pool[T]
	// pc is c's in-place methods, if it has them (struct records): with
	// them a batch is encoded from and decoded into its slice directly,
	// where c's by-value methods would move every record to the heap.
	pc codec.PointerCodec[T]
	// minSize is 1 when T's encoding takes at least a byte, so the bytes
	// left bound a decoded record count, and 0 for zero-size records
	// (struct{}).
	minSize int
}

// newChannelCodec is a node's runtime.Node.NewChannelCodec for output type
// T. It is called at deployment, never per record.
func newChannelCodec[T any](batchSize int) (runtime.ChannelCodec, error) {
	c, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	var zero T
	pc, _ := c.(codec.PointerCodec[T])
	return &batchCodec[T]{c: c, pc: pc, pool: network.NewPool[T](batchSize), minSize: min(1, len(c.Append(nil, zero)))}, nil
}

func (b *batchCodec[T]) AppendBatch(dst []byte, data any) []byte {
	recs := data.(*network.Batch[T]).Records
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	if b.pc != nil {
		for i := range recs {
			dst = b.pc.AppendFrom(dst, &recs[i])
		}
		return dst
	}
	for i := range recs {
		dst = b.c.Append(dst, recs[i])
	}
	return dst
}

// decodeRecord decodes one record from the front of src onto recs.
func (b *batchCodec[T]) decodeRecord(recs []T, src []byte) ([]T, int, error) {
	if b.pc != nil {
		var zero T
		recs = append(recs, zero)
		m, err := b.pc.DecodeInto(src, &recs[len(recs)-1])
		return recs, m, err
	}
	v, m, err := b.c.Decode(src)
	if err != nil {
		return recs, 0, err
	}
	return append(recs, v), m, nil
}

func (b *batchCodec[T]) DecodeBatch(src []byte) (any, int, error) {
	n, off := binary.Uvarint(src)
	if off <= 0 {
		return nil, 0, fmt.Errorf("channel state batch: bad record count: %w", codec.ErrCorrupt)
	}
	// A count the remaining bytes cannot hold is corrupt; checking it first
	// bounds the work a corrupt count can cause.
	if limit := b.maxRecords(len(src) - off); n > limit {
		return nil, 0, fmt.Errorf("channel state batch: %d records in %d bytes: %w", n, len(src)-off, codec.ErrCorrupt)
	}
	batch := b.pool.Get()
	for i := uint64(0); i < n; i++ {
		var m int
		var err error
		batch.Records, m, err = b.decodeRecord(batch.Records, src[off:])
		if err != nil {
			batch.Recycle()
			return nil, 0, fmt.Errorf("channel state batch: record %d of %d: %w", i, n, err)
		}
		off += m
	}
	return batch, off, nil
}

// maxRecords is the largest record count rest bytes can hold.
func (b *batchCodec[T]) maxRecords(rest int) uint64 {
	if b.minSize == 0 {
		// Zero-size records: a batch never holds more than a few batch
		// sizes (a partly filled batch is sent ahead of each event).
		return uint64(64 * b.pool.BatchSize())
	}
	return uint64(rest)
}

func (b *batchCodec[T]) Records(data any) int { return len(data.(*network.Batch[T]).Records) }

package weir

import (
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/network"
)

// batchCodec stores batches of T as channel state and on the wire: a
// uvarint header count<<1 | timed (timed is 1 when the batch has Times),
// then each record in T's codec, then, for a timed batch, each record's
// timestamp as a zigzag varint of its difference to the previous one (the
// first to 0). Timestamps of one batch are close together, so the deltas
// take a byte or two; the difference wraps around like int64 arithmetic,
// so any value, NoTimestamp included, round trips. Decoded batches come
// from its own pool, so the consuming task recycles them like any batch it
// polls; they have Times exactly when they were timed.
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
	schema  []byte // codec.AppendSchema of T
}

// newChannelCodec is a node's dataflow.Node.NewChannelCodec for output type
// T. It is called at deployment, never per record.
func newChannelCodec[T any](batchSize int) (dataflow.ChannelCodec, error) {
	c, err := codec.For[T]()
	if err != nil {
		return nil, err
	}
	s, err := codec.SchemaFor[T]()
	if err != nil {
		return nil, err
	}
	var zero T
	pc, _ := c.(codec.PointerCodec[T])
	return &batchCodec[T]{c: c, pc: pc, pool: network.NewPool[T](batchSize), minSize: min(1, len(c.Append(nil, zero))), schema: codec.AppendSchema(nil, s)}, nil
}

// Schema returns the encoded schema of T.
func (b *batchCodec[T]) Schema() []byte { return b.schema }

func (b *batchCodec[T]) AppendBatch(dst []byte, data any) []byte {
	batch := data.(*network.Batch[T])
	recs := batch.Records
	// A batch is timed when it has one timestamp per record. Times of
	// length 0 on a non-empty batch are the truncated slice Recycle left
	// on a pooled batch whose filler set no times: untimed. Any other
	// length is a bug of whoever filled the batch.
	var timed uint64
	switch {
	case batch.Times == nil || len(batch.Times) == 0 && len(recs) > 0:
	case len(batch.Times) == len(recs):
		timed = 1
	default:
		panic(fmt.Sprintf("weir: channel batch of %d records with %d timestamps: set Times to nil or to one per record", len(recs), len(batch.Times)))
	}
	dst = binary.AppendUvarint(dst, uint64(len(recs))<<1|timed)
	if b.pc != nil {
		for i := range recs {
			dst = b.pc.AppendFrom(dst, &recs[i])
		}
	} else {
		for i := range recs {
			dst = b.c.Append(dst, recs[i])
		}
	}
	if timed == 1 {
		var prev int64
		for _, ts := range batch.Times {
			dst = binary.AppendVarint(dst, ts-prev)
			prev = ts
		}
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
	h, off := binary.Uvarint(src)
	if off <= 0 {
		return nil, 0, fmt.Errorf("channel state batch: bad record count: %w", codec.ErrCorrupt)
	}
	n, timed := h>>1, h&1 == 1
	// A count the remaining bytes cannot hold is corrupt; checking it first
	// bounds the work a corrupt count can cause. A timestamp takes at least
	// a byte.
	rest := len(src) - off
	if limit := b.maxRecords(rest); n > limit || timed && n > uint64(rest) {
		return nil, 0, fmt.Errorf("channel state batch: %d records in %d bytes: %w", n, rest, codec.ErrCorrupt)
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
	if !timed {
		batch.Times = nil // a pooled batch may have carried times before
		return batch, off, nil
	}
	times := batch.Times[:0]
	if cap(times) < int(n) || times == nil { // once per pooled batch: non-nil even for 0 records
		times = make([]int64, 0, max(int(n), b.pool.BatchSize()))
	}
	var prev int64
	for i := uint64(0); i < n; i++ {
		d, m := binary.Varint(src[off:])
		if m <= 0 {
			batch.Times = times
			batch.Recycle()
			return nil, 0, fmt.Errorf("channel state batch: timestamp %d of %d: truncated or bad varint: %w", i, n, codec.ErrCorrupt)
		}
		prev += d
		times = append(times, prev)
		off += m
	}
	batch.Times = times
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

// KeepKeyGroups compacts the batch in place to the records whose key
// group keep accepts, timestamps alongside; the slots freed at the end are
// zeroed so the pooled batch holds no stale references.
func (b *batchCodec[T]) KeepKeyGroups(data any, keyHash any, maxParallelism int, keep func(kg int) bool) (any, int, error) {
	h, ok := keyHash.(func(T) uint32)
	if !ok {
		return nil, 0, fmt.Errorf("channel state: key function %T does not take %s records", keyHash, reflect.TypeFor[T]())
	}
	if maxParallelism < 1 {
		return nil, 0, fmt.Errorf("channel state: max parallelism %d", maxParallelism)
	}
	batch := data.(*network.Batch[T])
	timed := len(batch.Times) == len(batch.Records) && len(batch.Times) > 0
	n := 0
	for i := range batch.Records {
		if !keep(keygroup.Of(h(batch.Records[i]), maxParallelism)) {
			continue
		}
		batch.Records[n] = batch.Records[i]
		if timed {
			batch.Times[n] = batch.Times[i]
		}
		n++
	}
	clear(batch.Records[n:])
	batch.Records = batch.Records[:n]
	if timed {
		batch.Times = batch.Times[:n]
	}
	return batch, n, nil
}

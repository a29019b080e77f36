package network

// BatchOps is what code that holds a Data buffer's batch as `any` may do
// with it without knowing its record type: the in-flight log of
// WEAKLY_CONSISTENT mode (internal/runtime/weakrt, sender.go) counts,
// trims and copies batches through it. *Batch[T] implements it.
type BatchOps interface {
	// Len is the number of records.
	Len() int
	// DropFront removes the first n records (and their timestamps).
	DropFront(n int)
	// Copy returns a new batch, outside every pool, holding the same
	// records and timestamps: recycling it is a no-op, so its holder and
	// the consumer it is sent to never share a slice.
	Copy() any
	// CopyTo is Copy into dst, an earlier copy of the same type (or nil),
	// reusing its slices: the in-flight log's copies cost no allocation
	// once it reached its working size.
	CopyTo(dst any) any
	// Recycle returns the batch to its pool.
	Recycle()
}

var _ BatchOps = (*Batch[int])(nil)

// Len is the number of records in the batch.
func (b *Batch[T]) Len() int { return len(b.Records) }

// DropFront removes the first n records and their timestamps, keeping the
// batch's identity (and pool).
func (b *Batch[T]) DropFront(n int) {
	n = min(n, len(b.Records))
	m := copy(b.Records, b.Records[n:])
	clear(b.Records[m:])
	b.Records = b.Records[:m]
	if b.Times != nil {
		b.Times = b.Times[:copy(b.Times, b.Times[n:])]
	}
}

// Copy returns a copy of the batch that belongs to no pool.
func (b *Batch[T]) Copy() any {
	c := &Batch[T]{Records: append([]T(nil), b.Records...)}
	if b.Times != nil {
		c.Times = append([]int64(nil), b.Times...)
	}
	return c
}

// CopyTo copies the batch into dst (a *Batch[T] outside every pool, or
// nil) and returns it.
func (b *Batch[T]) CopyTo(dst any) any {
	c, _ := dst.(*Batch[T])
	if c == nil || c.pool != nil {
		c = &Batch[T]{}
	}
	c.Records = append(c.Records[:0], b.Records...)
	if b.Times != nil {
		c.Times = append(c.Times[:0], b.Times...)
	} else {
		c.Times = nil
	}
	return c
}

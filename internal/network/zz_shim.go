package network

import (
	"context"
	"math"
)

// SHIM until the netwm branch merges.
const NoTimestamp int64 = math.MinInt64

func WithTimestamps() WriterOption { return func(*writerConfig) {} }

func (w *Writer[T]) EmitBatchTimed(ctx context.Context, rs []T, ts []int64) error {
	return w.EmitBatch(ctx, rs)
}

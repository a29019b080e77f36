package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// rowBuffer holds buffered rows flat, ncols values each, so that buffering
// a record allocates nothing once the buffer has grown.
type rowBuffer struct {
	ncols int
	vals  []any
}

// add appends the row of v. The row function must append exactly one value
// per column; anything else is a bug in it, reported with the counts.
func add[T any](b *rowBuffer, row func(T, []any) []any, v T) error {
	before := len(b.vals)
	b.vals = row(v, b.vals)
	if got := len(b.vals) - before; got != b.ncols {
		b.vals = b.vals[:before]
		return fmt.Errorf("row function appended %d values for %d columns; append one value per column, in column order", got, b.ncols)
	}
	return nil
}

func (b *rowBuffer) rows() int { return len(b.vals) / b.ncols }

func (b *rowBuffer) row(i int) []any { return b.vals[i*b.ncols : (i+1)*b.ncols] }

// reset empties the buffer and drops the references it held, so the values
// of flushed rows can be collected.
func (b *rowBuffer) reset() {
	clear(b.vals)
	b.vals = b.vals[:0]
}

// copySource feeds a rowBuffer to COPY.
func (b *rowBuffer) copySource() pgx.CopyFromSource {
	return pgx.CopyFromSlice(b.rows(), func(i int) ([]any, error) { return b.row(i), nil })
}

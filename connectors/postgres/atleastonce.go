package postgres

import (
	"context"

	"github.com/weirstream/weir"
)

// AtLeastOnce returns a factory of at-least-once PostgreSQL sinks for
// weir.SinkTo: rows (row appends v's values to dst, one per column, in
// order) are sent with COPY in batches of WithBatchRows and at every
// checkpoint. After a restore the rows since the last checkpoint are
// written again, so the table may hold duplicates; use Upsert or
// ExactlyOnce when it must not.
func AtLeastOnce[T any](connString, table string, columns []string, row func(v T, dst []any) []any, opts ...Option) func() weir.Sink[T] {
	cfg := newConfig(opts)
	cols := append([]string(nil), columns...)
	return func() weir.Sink[T] { return newAtLeastOnce(connString, table, cols, row, cfg) }
}

func newAtLeastOnce[T any](connString, table string, cols []string, row func(T, []any) []any, cfg config) *plainSink[T] {
	s := &plainSink[T]{connString: connString, table: table, columns: cols, row: row, cfg: cfg}
	s.flush = func(ctx context.Context) error {
		// One COPY is one statement, so a batch lands whole or not at all.
		_, err := s.conn.CopyFrom(ctx, s.target, s.columns, s.buf.copySource())
		return err
	}
	return s
}

package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// plainSink is what Upsert and AtLeastOnce share: one connection, the
// target table and a row buffer. flush is the mode's way of sending the
// buffer.
type plainSink[T any] struct {
	connString string
	table      string
	columns    []string
	row        func(T, []any) []any
	cfg        config
	name       string // "postgres sink <uid>/<subtask>", for messages

	target pgx.Identifier
	conn   *pgx.Conn
	server string
	buf    rowBuffer
	flush  func(ctx context.Context) error
}

func (s *plainSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	return s.open(ctx, rc.UID(), rc.Subtask())
}

func (s *plainSink[T]) open(ctx context.Context, uid string, subtask int) error {
	s.name = fmt.Sprintf("postgres sink %s/%d", uid, subtask)
	if s.row == nil {
		return weir.Unrecoverable(fmt.Errorf("%s: nil row function", s.name))
	}
	if err := checkColumns(s.columns); err != nil {
		return weir.Unrecoverable(fmt.Errorf("%s: %w", s.name, err))
	}
	var err error
	if s.target, err = tableName(s.table); err != nil {
		return weir.Unrecoverable(fmt.Errorf("%s: %w", s.name, err))
	}
	s.buf = rowBuffer{ncols: len(s.columns)}
	cctx, cancel := s.cfg.op(ctx)
	defer cancel()
	if s.conn, err = connect(cctx, s.cfg, s.connString); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.server = serverName(s.conn)
	if s.cfg.createTable != "" {
		if err := createTable(ctx, s.conn, s.cfg, s.target, s.cfg.createTable); err != nil {
			s.Close(ctx) // the operator does not Close a sink whose Open failed
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// Write buffers the rows of batch and sends them once WithBatchRows are
// buffered.
func (s *plainSink[T]) Write(ctx context.Context, batch []T) error {
	for _, v := range batch {
		if err := add(&s.buf, s.row, v); err != nil {
			return fmt.Errorf("%s: table %s: %w", s.name, s.table, err)
		}
		if s.buf.rows() >= s.cfg.batchRows {
			if err := s.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush sends the buffered rows; it runs at every checkpoint, so that what
// the checkpoint covers is in the table.
func (s *plainSink[T]) Flush(ctx context.Context) error {
	if s.buf.rows() == 0 {
		return nil
	}
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	if err := s.flush(ctx); err != nil {
		return fmt.Errorf("%s: write %d rows into %s on %s: %w", s.name, s.buf.rows(), s.table, s.server, err)
	}
	s.buf.reset()
	return nil
}

// Close closes the connection; buffered rows are dropped, since no
// checkpoint covers them and the restore replays them.
func (s *plainSink[T]) Close(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	err := s.conn.Close(ctx)
	s.conn = nil
	if err != nil {
		return fmt.Errorf("%s: close connection: %w", s.name, err)
	}
	return nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// ExactlyOnce returns a factory of exactly-once PostgreSQL sinks for
// weir.SinkToTransactional. Each subtask writes the rows of one checkpoint
// interval in one transaction on a connection of its own: row appends the
// values of v's row to dst, one per column of columns, in order, and
// returns dst. At the checkpoint barrier the transaction records a marker
// row and is prepared (PREPARE TRANSACTION); once the checkpoint completes
// it is committed (COMMIT PREPARED). The server must allow prepared
// transactions (max_prepared_transactions > 0); Open fails for good, saying
// how to enable them, if it does not. See the package documentation.
func ExactlyOnce[T any](connString, table string, columns []string, row func(v T, dst []any) []any, opts ...Option) func() weir.TwoPhaseCommitSink[T, Txn] {
	cfg := newConfig(opts)
	cols := append([]string(nil), columns...)
	return func() weir.TwoPhaseCommitSink[T, Txn] {
		return &exactlyOnce[T]{connString: connString, table: table, columns: cols, row: row, cfg: cfg}
	}
}

// exactlyOnce is one subtask's sink. It is not safe for concurrent use: the
// subtask's task loop owns it. It holds two connections: data carries the
// open transaction, control runs COMMIT/ROLLBACK PREPARED and lookups,
// which PostgreSQL refuses inside a transaction block, and which the
// operator calls while the next transaction is already open on data.
type exactlyOnce[T any] struct {
	connString string
	table      string
	columns    []string
	row        func(T, []any) []any
	cfg        config

	target  pgx.Identifier
	markers pgx.Identifier
	data    *pgx.Conn
	control *pgx.Conn
	server  string // host:port/database, for messages
	sink    string // "<prefix>:<uid>", the gid prefix of every subtask
	subtask int
	// parallelism is the sink's, for the advice when prepared-transaction
	// slots run out.
	parallelism int
	log         *slog.Logger
	next        uint64 // sequence number of the next Begin

	cur    Txn  // the open transaction, if hasCur
	hasCur bool // Begin called, PreCommit or Abort not yet
	begun  bool // BEGIN sent for cur: rows were flushed into it
	rows   int64
	buf    rowBuffer
}

func (s *exactlyOnce[T]) Open(ctx context.Context, rc *weir.RuntimeContext, restored []Txn) error {
	log := s.cfg.logger
	if log == nil {
		log = rc.Logger()
	}
	if !s.cfg.prefixSet && checkName("job name", rc.JobName()) == nil {
		// The global transaction ids then name the job, the operator and
		// the subtask (the marker row records the sequence).
		s.cfg.prefix = rc.JobName()
	}
	return s.open(ctx, rc.UID(), rc.Subtask(), rc.Parallelism(), log, restored)
}

// open is Open without the weir.RuntimeContext, so tests can drive a sink
// alone.
func (s *exactlyOnce[T]) open(ctx context.Context, uid string, subtask, parallelism int, log *slog.Logger, restored []Txn) error {
	if err := s.validate(uid); err != nil {
		return weir.Unrecoverable(fmt.Errorf("postgres sink %s: %w", uid, err))
	}
	if log == nil {
		log = s.cfg.logger
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.sink, s.subtask, s.parallelism, s.log = sinkID(s.cfg.prefix, uid), subtask, parallelism, log
	s.buf = rowBuffer{ncols: len(s.columns)}
	err := s.connect(ctx)
	if err == nil {
		err = s.prepareSchema(ctx)
	}
	if err == nil {
		s.next, err = s.cleanUp(ctx, parallelism, restored)
	}
	if err != nil {
		// The operator does not Close a sink whose Open failed.
		s.Close(ctx)
		return fmt.Errorf("postgres sink %s/%d: %w", uid, subtask, err)
	}
	return nil
}

func (s *exactlyOnce[T]) validate(uid string) error {
	if s.row == nil {
		return fmt.Errorf("nil row function")
	}
	if err := checkColumns(s.columns); err != nil {
		return err
	}
	if err := checkSinkID(s.cfg.prefix, uid); err != nil {
		return err
	}
	var err error
	if s.target, err = tableName(s.table); err != nil {
		return err
	}
	if s.markers, err = tableName(s.cfg.markerTable); err != nil {
		return fmt.Errorf("marker %w", err)
	}
	return nil
}

func (s *exactlyOnce[T]) connect(ctx context.Context) error {
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	var err error
	if s.data, err = connect(ctx, s.cfg, s.connString); err != nil {
		return err
	}
	if s.control, err = connect(ctx, s.cfg, s.connString); err != nil {
		return err
	}
	s.server = serverName(s.control)
	var setting string
	if err := s.control.QueryRow(ctx, "SHOW max_prepared_transactions").Scan(&setting); err != nil {
		return fmt.Errorf("read max_prepared_transactions of %s: %w", s.server, err)
	}
	return checkPreparedTransactions(setting, s.server)
}

func (s *exactlyOnce[T]) prepareSchema(ctx context.Context) error {
	if err := createMarkerTable(ctx, s.control, s.cfg, s.markers); err != nil {
		return err
	}
	if s.cfg.createTable != "" {
		return createTable(ctx, s.control, s.cfg, s.target, s.cfg.createTable)
	}
	return nil
}

// Begin hands out the next transaction id. Nothing is sent yet: BEGIN goes
// out with the first rows, or at PreCommit for an empty transaction.
func (s *exactlyOnce[T]) Begin(context.Context) (Txn, error) {
	if s.data == nil {
		return Txn{}, fmt.Errorf("postgres sink %s/%d: begin before Open or after Close", s.sink, s.subtask)
	}
	if s.hasCur {
		return Txn{}, fmt.Errorf("postgres sink %s/%d: begin while %s is open; pre-commit or abort it first", s.sink, s.subtask, s.cur.GID)
	}
	s.cur = Txn{GID: gidOf(s.sink, s.subtask, s.next), Seq: s.next}
	s.next++
	s.hasCur, s.begun, s.rows = true, false, 0
	return s.cur, nil
}

// Write buffers the rows of batch and sends them with COPY once
// WithBatchRows of them are buffered.
func (s *exactlyOnce[T]) Write(ctx context.Context, txn Txn, batch []T) error {
	if !s.isCurrent(txn) {
		return fmt.Errorf("postgres sink %s/%d: write to %s: not the open transaction (not begun, pre-committed or aborted)", s.sink, s.subtask, txn.GID)
	}
	for _, v := range batch {
		if err := add(&s.buf, s.row, v); err != nil {
			return fmt.Errorf("postgres sink %s/%d: table %s: %w", s.sink, s.subtask, s.table, err)
		}
		if s.buf.rows() >= s.cfg.batchRows {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *exactlyOnce[T]) isCurrent(txn Txn) bool { return s.hasCur && txn.GID == s.cur.GID }

// flush opens the server transaction if needed and copies the buffered
// rows into it.
func (s *exactlyOnce[T]) flush(ctx context.Context) error {
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	if !s.begun {
		if _, err := s.data.Exec(ctx, "BEGIN"); err != nil {
			return fmt.Errorf("postgres sink %s/%d: begin %s on %s: %w", s.sink, s.subtask, s.cur.GID, s.server, err)
		}
		s.begun = true
	}
	if s.buf.rows() == 0 {
		return nil
	}
	n, err := s.data.CopyFrom(ctx, s.target, s.columns, s.buf.copySource())
	if err != nil {
		return fmt.Errorf("postgres sink %s/%d: copy %d rows into %s (columns %v) in %s: %w", s.sink, s.subtask, s.buf.rows(), s.table, s.columns, s.cur.GID, err)
	}
	s.rows += n
	s.buf.reset()
	return nil
}

// PreCommit sends the remaining rows, inserts the transaction's marker row
// and prepares the transaction: from here it survives a crash of the task,
// the process and the server, until COMMIT or ROLLBACK PREPARED. An empty
// transaction is prepared too (with just its marker), so that Commit finds
// it like any other.
func (s *exactlyOnce[T]) PreCommit(ctx context.Context, txn Txn) error {
	if !s.isCurrent(txn) {
		return fmt.Errorf("postgres sink %s/%d: pre-commit %s: not the open transaction (not begun, pre-committed already or aborted)", s.sink, s.subtask, txn.GID)
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	if _, err := s.data.Exec(ctx, "INSERT INTO "+s.markers.Sanitize()+" (gid, sink, subtask, seq, target, rows) VALUES ($1, $2, $3, $4, $5, $6)",
		txn.GID, s.sink, s.subtask, int64(txn.Seq), s.table, s.rows); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// The marker's key is the transaction id: an insert waits only
			// on a transaction holding the same id, open or prepared by
			// another attempt of this subtask that was declared dead but
			// ran on (a zombie). The failover's Open rolls it back.
			return fmt.Errorf("postgres sink %s/%d: insert marker of %s into %s: waited the sink's timeout on another attempt of this subtask that holds the same transaction id (a paused or partitioned earlier attempt, prepared after this one opened); the restart rolls that transaction back: %w", s.sink, s.subtask, txn.GID, s.cfg.markerTable, err)
		}
		return fmt.Errorf("postgres sink %s/%d: insert marker of %s into %s: %w", s.sink, s.subtask, txn.GID, s.cfg.markerTable, err)
	}
	// Whatever PREPARE returns, the transaction is no longer open on data:
	// prepared, or rolled back by the server.
	s.hasCur = false
	if _, err := s.data.Exec(ctx, "PREPARE TRANSACTION "+quoteLiteral(txn.GID)); err != nil {
		if slotsExhausted(err) {
			return s.slotsExhaustedError(ctx, txn, err)
		}
		return fmt.Errorf("postgres sink %s/%d: prepare %s on %s: %w", s.sink, s.subtask, txn.GID, s.server, err)
	}
	return nil
}

// Commit commits a prepared transaction. It is idempotent: if txn is not
// prepared but its marker row is visible, it was committed before. When
// the connection breaks after COMMIT PREPARED went out, Commit resolves
// the outcome on a new connection, retrying while the server is out of
// reach, for at most WithResolveTimeout (see finishPrepared).
func (s *exactlyOnce[T]) Commit(ctx context.Context, txn Txn) error {
	if s.isCurrent(txn) {
		return fmt.Errorf("postgres sink %s/%d: commit %s: not pre-committed; call PreCommit at the barrier first", s.sink, s.subtask, txn.GID)
	}
	committed, err := s.finishPrepared(ctx, txn, true)
	switch {
	case err != nil:
		return err
	case committed:
		return nil
	}
	return fmt.Errorf("commit %s on %s: neither prepared nor committed (no marker row in %s): %w; it was rolled back outside this job, or the checkpoint belongs to another database",
		txn.GID, s.server, s.cfg.markerTable, weir.ErrTransactionLost)
}

// Abort discards txn: the open transaction is rolled back on its
// connection, a prepared one with ROLLBACK PREPARED. Aborting a
// transaction that does not exist (never prepared, or rolled back before)
// succeeds; one whose marker row is visible was committed, and Abort says
// so with weir.ErrAlreadyCommitted. ROLLBACK PREPARED whose answer is lost
// is resolved as Commit resolves COMMIT PREPARED. After a cancellation (Close's abort)
// ctx is done and the ROLLBACK fails at once; the server rolls the open
// transaction back anyway when Close drops the connection.
func (s *exactlyOnce[T]) Abort(ctx context.Context, txn Txn) error {
	if s.isCurrent(txn) {
		s.hasCur = false
		s.buf.reset()
		if !s.begun {
			return nil
		}
		ctx, cancel := s.cfg.op(ctx)
		defer cancel()
		if _, err := s.data.Exec(ctx, "ROLLBACK"); err != nil {
			return fmt.Errorf("postgres sink %s/%d: roll back open %s on %s: %w", s.sink, s.subtask, txn.GID, s.server, err)
		}
		return nil
	}
	committed, err := s.finishPrepared(ctx, txn, false)
	switch {
	case err != nil:
		return err
	case committed:
		return fmt.Errorf("postgres sink %s/%d: abort %s: its marker row in %s shows it committed: %w", s.sink, s.subtask, txn.GID, s.cfg.markerTable, weir.ErrAlreadyCommitted)
	}
	return nil
}

// markerVisible reports whether txn's marker row is visible, that is
// whether txn committed: the row was inserted in txn itself.
func (s *exactlyOnce[T]) markerVisible(ctx context.Context, txn Txn) (bool, error) {
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	var ok bool
	err := s.control.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+s.markers.Sanitize()+" WHERE gid = $1)", txn.GID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up marker of %s in %s: %w", txn.GID, s.cfg.markerTable, err)
	}
	return ok, nil
}

// Close closes both connections. The server rolls back a transaction still
// open on data; prepared ones stay for the next Open to commit or clean.
func (s *exactlyOnce[T]) Close(ctx context.Context) error {
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	var errs []error
	for _, c := range []*pgx.Conn{s.data, s.control} {
		if c != nil {
			if err := c.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("postgres sink %s/%d: close connection: %w", s.sink, s.subtask, err))
			}
		}
	}
	s.data, s.control, s.hasCur = nil, nil, false
	return errors.Join(errs...)
}

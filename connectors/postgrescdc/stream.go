package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/weirstream/weir"
)

// relation is a table as the log last described it (a Relation message).
type relation struct {
	info *tableInfo // nil: not captured
	cols []Column
	prog *tableProgress
}

// txnState is the transaction being read from the log.
type txnState struct {
	active   bool
	finalLSN uint64
	xid      uint32
	commit   time.Time
	seq      int64   // candidate changes seen so far in the transaction
	skip     int64   // the first skip were handled before the restore
	held     *Change // the last change, held until the next tells whether it ends the transaction
	emitted  bool    // a change of it was emitted (the next is not TxFirst)
	suppress bool    // the transaction may touch chunk ranges that saw it
}

// startStream opens the replication connection and starts streaming
// from the checkpoint's position.
func (s *source) startStream(ctx context.Context) error {
	slot, err := readSlotFree(ctx, s.conn, s.cfg.slot)
	if err != nil {
		return err
	}
	if !slot.exists {
		return weir.Unrecoverable(setupErr("replication slot %q is gone: it holds the log since the checkpoint; the changes since are lost to this job: start it afresh (without the checkpoint) to snapshot again", s.cfg.slot))
	}
	if slot.confirmed > s.st.Done {
		return weir.Unrecoverable(setupErr("replication slot %q confirmed LSN %s, past the checkpoint's position %s: the slot no longer has the changes in between (was the job restored from an older checkpoint, or the slot read by someone else?): start the job afresh with a new slot", s.cfg.slot, pglogrepl.LSN(slot.confirmed), pglogrepl.LSN(s.st.Done)))
	}
	rc, err := s.replicationConn(ctx)
	if err != nil {
		return err
	}
	s.repl = rc
	args := []string{"proto_version '1'", "publication_names '" + s.cfg.publication + "'"}
	if err := pglogrepl.StartReplication(ctx, rc, s.cfg.slot, pglogrepl.LSN(s.st.Done), pglogrepl.StartReplicationOptions{PluginArgs: args}); err != nil {
		return fmt.Errorf("start replication from slot %q at %s: %w", s.cfg.slot, pglogrepl.LSN(s.st.Done), err)
	}
	s.confirmed = slot.confirmed
	s.lastChange = time.Now()
	s.nextStatus = time.Now()
	s.maxInsert = s.st.maxInsertLSN()
	s.rels = map[uint32]*relation{}
	s.types = pgtype.NewMap()
	return nil
}

// replicationConn opens a connection in logical replication mode.
func (s *source) replicationConn(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(s.connString)
	if err != nil {
		return nil, fmt.Errorf("postgres cdc: connection string: %w", err)
	}
	cfg.RuntimeParams["replication"] = "database"
	c, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres cdc: replication connection to %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return c, nil
}

// readLog reads log messages for up to the poll wait, appending changes.
func (s *source) readLog(ctx context.Context, dst []Change, max int) ([]Change, error) {
	// One read deadline for the whole call, set on the connection: a
	// context with a deadline per message costs pgconn a watcher
	// goroutine, a timer and a channel per message (a third of the
	// source's CPU when it streams). A cancelled ctx is therefore noticed
	// between messages and at the deadline, within pollWait.
	conn := s.repl.Conn()
	if err := conn.SetReadDeadline(time.Now().Add(s.cfg.pollWait)); err != nil {
		return dst, fmt.Errorf("postgres cdc: slot %q: set the read deadline: %w", s.cfg.slot, err)
	}
	defer conn.SetReadDeadline(time.Time{})
	// One message appends at most two changes (a key change's delete
	// and insert release the held change and the delete).
	for len(dst) == 0 || len(dst)+2 <= max {
		if err := ctx.Err(); err != nil {
			return dst, err
		}
		if err := s.maybeStatus(ctx, false); err != nil {
			return dst, err
		}
		// context.Background, exactly: pgconn then sets up no watcher.
		msg, err := s.repl.ReceiveMessage(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return dst, ctx.Err()
			}
			if pgconn.Timeout(err) {
				break
			}
			return dst, fmt.Errorf("postgres cdc: receive from slot %q: %w", s.cfg.slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if dst, err = s.copyData(ctx, m.Data, dst); err != nil {
				return dst, err
			}
		case *pgproto3.ErrorResponse:
			return dst, fmt.Errorf("postgres cdc: slot %q: %w", s.cfg.slot, pgconn.ErrorResponseToPgError(m))
		}
	}
	if s.cfg.idleTimeout > 0 && !s.txn.active && time.Since(s.lastChange) >= s.cfg.idleTimeout {
		return dst, io.EOF
	}
	return dst, nil
}

func (s *source) copyData(ctx context.Context, data []byte, dst []Change) ([]Change, error) {
	if len(data) == 0 {
		return dst, nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return dst, fmt.Errorf("postgres cdc: keepalive: %w", err)
		}
		s.metrics.walEnd(uint64(k.ServerWALEnd), s.st.Done)
		// Between transactions the server's WAL end is a position
		// before which every captured change was sent: the walsender
		// sends a transaction when it decodes its commit record, in WAL
		// order. Taking it in lets the slot advance while the captured
		// tables are idle.
		if !s.txn.active && uint64(k.ServerWALEnd) > s.st.Done {
			s.st.Done = uint64(k.ServerWALEnd)
			s.metrics.lagSeconds(0)
		}
		if k.ReplyRequested {
			return dst, s.maybeStatus(ctx, true)
		}
		return dst, nil
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return dst, fmt.Errorf("postgres cdc: WAL data: %w", err)
		}
		s.metrics.walEnd(uint64(x.ServerWALEnd), s.st.Done)
		m, err := pglogrepl.Parse(x.WALData)
		if err != nil {
			return dst, fmt.Errorf("postgres cdc: decode pgoutput message at %s: %w", x.WALStart, err)
		}
		return s.message(ctx, m, dst)
	}
	return dst, nil
}

// message handles one pgoutput message.
func (s *source) message(ctx context.Context, m pglogrepl.Message, dst []Change) ([]Change, error) {
	switch m := m.(type) {
	case *pglogrepl.BeginMessage:
		s.txn = txnState{active: true, finalLSN: uint64(m.FinalLSN), xid: m.Xid, commit: m.CommitTime}
		if s.txn.finalLSN == s.st.PartialLSN {
			s.txn.skip = s.st.PartialN
			s.txn.emitted = s.st.PartialN > 0
		}
		s.txn.suppress = s.txn.finalLSN < s.maxInsert
		s.metrics.lagSeconds(time.Since(m.CommitTime).Seconds())
	case *pglogrepl.CommitMessage:
		if s.txn.finalLSN < s.st.Done {
			// A transaction emitted before the restore (the server
			// starts at the slot's position, which may precede ours): it
			// must not clear the count of a partly emitted one.
			s.txn = txnState{}
			return dst, nil
		}
		if h := s.txn.held; h != nil {
			h.TxLast = true
			dst = append(dst, *h)
		}
		if end := uint64(m.TransactionEndLSN); end > s.st.Done {
			s.st.Done = end
		}
		s.st.PartialLSN, s.st.PartialN = 0, 0
		s.txn = txnState{}
		if s.maxInsert != 0 && s.st.Done >= s.maxInsert {
			s.dropChunks()
		}
	case *pglogrepl.RelationMessage:
		if err := s.relation(ctx, m); err != nil {
			return dst, err
		}
	case *pglogrepl.InsertMessage:
		return s.candidates(dst, m.RelationID, func(r *relation) ([]Change, error) {
			after, err := s.row(r, m.Tuple)
			return []Change{{Op: OpInsert, After: after}}, err
		})
	case *pglogrepl.UpdateMessage:
		return s.candidates(dst, m.RelationID, func(r *relation) ([]Change, error) {
			after, err := s.row(r, m.NewTuple)
			if err != nil {
				return nil, err
			}
			var before Row
			if m.OldTuple != nil {
				if before, err = s.row(r, m.OldTuple); err != nil {
					return nil, err
				}
			}
			if before != nil && !sameKey(r, before, after) {
				// A new primary key: the old row is gone and a new one
				// exists, in two chunk ranges that may each have seen the
				// transaction or not.
				return []Change{{Op: OpDelete, Before: before}, {Op: OpInsert, After: after}}, nil
			}
			return []Change{{Op: OpUpdate, Before: before, After: after}}, nil
		})
	case *pglogrepl.DeleteMessage:
		return s.candidates(dst, m.RelationID, func(r *relation) ([]Change, error) {
			before, err := s.row(r, m.OldTuple)
			return []Change{{Op: OpDelete, Before: before}}, err
		})
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if r := s.rels[id]; r != nil && r.info != nil {
				return dst, weir.Unrecoverable(fmt.Errorf("postgres cdc: table %s was truncated; the changelog has no record for that: exclude TRUNCATE from the publication (ALTER PUBLICATION %s SET (publish = 'insert, update, delete')) and resynchronise by starting the job afresh", r.info.qualified(), s.cfg.publication))
			}
		}
	}
	return dst, nil
}

// relation takes in a table's (new) description. A column added or
// dropped shows up here before the first change that has it; the changes
// then carry the new columns (see docs/connectors/postgres-cdc.md).
func (s *source) relation(ctx context.Context, m *pglogrepl.RelationMessage) error {
	r := &relation{}
	for i := range s.tables {
		if s.tables[i].schema == m.Namespace && s.tables[i].name == m.RelationName {
			r.info = &s.tables[i]
			r.prog = &s.st.Tables[i]
		}
	}
	for _, c := range m.Columns {
		col := Column{Name: c.Name, TypeOID: c.DataType, TypeMod: c.TypeModifier}
		if r.info != nil {
			for _, k := range r.info.keys {
				col.Key = col.Key || k == c.Name
			}
		}
		r.cols = append(r.cols, col)
	}
	if r.info != nil {
		if err := fillMissing(ctx, s.conn, *r.info, r.cols); err != nil {
			return err
		}
	}
	if old := s.rels[m.RelationID]; old != nil && r.info != nil && len(old.cols) != len(r.cols) {
		s.log.Info("postgres cdc: table schema changed; changes carry the new columns", "table", r.info.qualified(), "columns", len(r.cols), "before", len(old.cols))
	}
	s.rels[m.RelationID] = r
	return nil
}

// candidates handles the changes one log message makes: it skips those
// emitted before a restore and those a snapshot chunk already saw, and
// holds back the last so the transaction's end can be marked on it.
func (s *source) candidates(dst []Change, relID uint32, build func(*relation) ([]Change, error)) ([]Change, error) {
	r := s.rels[relID]
	if r == nil {
		return dst, fmt.Errorf("postgres cdc: change of relation %d before its description", relID)
	}
	if r.info == nil || !s.txn.active || s.txn.finalLSN < s.st.Done {
		return dst, nil // not captured, or a transaction emitted before
	}
	cs, err := build(r)
	if err != nil {
		return dst, fmt.Errorf("postgres cdc: table %s: %w", r.info.qualified(), err)
	}
	for _, c := range cs {
		idx := s.txn.seq
		s.txn.seq++
		if idx < s.txn.skip {
			continue
		}
		if s.txn.suppress {
			seen, err := s.seenBySnapshot(r, c)
			if err != nil {
				return dst, err
			}
			if seen {
				if s.cfg.onSuppress != nil {
					s.cfg.onSuppress()
				}
				if s.txn.held == nil {
					s.st.PartialLSN, s.st.PartialN = s.txn.finalLSN, s.txn.seq
				}
				continue
			}
		}
		c.Schema, c.Table, c.Columns = r.info.schema, r.info.name, r.cols
		c.LSN, c.Xid, c.CommitTime = pglogrepl.LSN(s.txn.finalLSN), s.txn.xid, s.txn.commit
		if h := s.txn.held; h != nil {
			// Every candidate before this one is handled now: the held
			// one is emitted, those after it were suppressed.
			dst = append(dst, *h)
			s.st.PartialLSN, s.st.PartialN = s.txn.finalLSN, idx
		}
		c.TxFirst = !s.txn.emitted
		s.txn.emitted = true
		s.txn.held = &c
		s.lastChange = time.Now()
	}
	return dst, nil
}

// seenBySnapshot reports whether the snapshot chunk holding the change's
// key saw its transaction, so that the chunk's row already has it.
func (s *source) seenBySnapshot(r *relation, c Change) (bool, error) {
	k, err := changeKey(r.info, c)
	if err != nil {
		return false, err
	}
	ch := chunkOf(*r.info, r.prog, k)
	if ch == nil {
		return false, nil
	}
	return ch.Snap.visible(s.txn.xid), nil
}

// changeKey returns the primary key of the row a log change is about.
func changeKey(t *tableInfo, c Change) ([]keyVal, error) {
	row := c.After
	if c.Op == OpDelete {
		row = c.Before
	}
	vals := make([]any, len(t.keys))
	for i, k := range t.keys {
		v, ok := row[k]
		if !ok {
			return nil, fmt.Errorf("postgres cdc: table %s: change without key column %q", t.qualified(), k)
		}
		vals[i] = v
	}
	k, err := keyOf(t.kinds, vals)
	if err != nil {
		return nil, fmt.Errorf("postgres cdc: table %s: %w", t.qualified(), err)
	}
	return k, nil
}

// dropChunks forgets the chunk snapshots once the log passed every
// chunk's insert position: no later transaction is seen by any.
func (s *source) dropChunks() {
	for i := range s.st.Tables {
		s.st.Tables[i].Chunks = nil
	}
	s.maxInsert = 0
}

// row decodes a tuple by the relation's columns; unchanged TOASTed
// values are left out.
func (s *source) row(r *relation, t *pglogrepl.TupleData) (Row, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Columns) != len(r.cols) {
		return nil, fmt.Errorf("tuple of %d columns, relation of %d", len(t.Columns), len(r.cols))
	}
	row := make(Row, len(r.cols))
	for i, c := range t.Columns {
		col := r.cols[i]
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			row[col.Name] = nil
		case pglogrepl.TupleDataTypeToast:
			// unchanged; not sent
		case pglogrepl.TupleDataTypeText:
			v, err := s.decode(col.TypeOID, c.Data)
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", col.Name, err)
			}
			row[col.Name] = v
		default:
			return nil, fmt.Errorf("column %q: tuple data type %q", col.Name, c.DataType)
		}
	}
	return row, nil
}

func (s *source) decode(oid uint32, data []byte) (any, error) {
	if dt, ok := s.types.TypeForOID(oid); ok {
		return dt.Codec.DecodeValue(s.types, oid, pgtype.TextFormatCode, data)
	}
	return string(data), nil
}

// sameKey reports whether before and after have the same primary key.
func sameKey(r *relation, before, after Row) bool {
	for _, k := range r.info.keys {
		b, okb := before[k]
		a, oka := after[k]
		if !okb || !oka {
			continue // not sent: unchanged
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return false
		}
	}
	return true
}

// maybeStatus sends a standby status update when one is due (or now):
// it reports the LSN the last completed checkpoint covers, and keeps the
// connection alive.
func (s *source) maybeStatus(ctx context.Context, now bool) error {
	if s.repl == nil || (!now && time.Now().Before(s.nextStatus)) {
		return nil
	}
	l := pglogrepl.LSN(s.confirmed)
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: l, WALFlushPosition: l, WALApplyPosition: l, ClientTime: time.Now()})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("postgres cdc: standby status to slot %q: %w", s.cfg.slot, err)
	}
	s.nextStatus = time.Now().Add(s.cfg.statusInterval)
	return err
}

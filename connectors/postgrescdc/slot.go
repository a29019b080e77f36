package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// createdSlot remembers, for the attempts of one job in one process,
// that the job created its slot: an attempt that starts afresh (the job
// failed before its first checkpoint completed) may then drop the slot
// and create it anew, since nothing depends on it. A slot this process
// did not create is never dropped.
type createdSlot struct {
	mu  sync.Mutex
	lsn uint64 // the start point of the slot it created; 0: none
}

func (c *createdSlot) set(lsn uint64) {
	c.mu.Lock()
	c.lsn = lsn
	c.mu.Unlock()
}

func (c *createdSlot) get() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lsn
}

// fresh creates the slot with an exported snapshot and records the
// slot's start point and what that snapshot sees.
func (s *source) fresh(ctx context.Context) error {
	slot, err := readSlotFree(ctx, s.conn, s.cfg.slot)
	if err != nil {
		return err
	}
	if slot.exists {
		if why := s.unusedOwnSlot(slot); why != "" {
			s.log.Info("postgres cdc: dropping the slot "+why+" before any checkpoint completed, to snapshot afresh", "slot", s.cfg.slot)
			if _, err := s.conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", s.cfg.slot); err != nil {
				return fmt.Errorf("drop replication slot %q, which %s: %w", s.cfg.slot, why, err)
			}
			slot.exists = false
		}
	}
	if slot.exists {
		return setupErr("replication slot %q exists, and a fresh start needs a slot created with its snapshot: restore the job from its checkpoint, or drop the slot (SELECT pg_drop_replication_slot('%s')) if no job needs it, or name another slot (--slot, WithSlot); a slot this job created in a run killed before its first checkpoint is dropped by itself when the job keeps a slot record (WithSlotRecord; weir run cdc does)", s.cfg.slot, s.cfg.slot)
	}
	if !s.cfg.createSlot {
		return setupErr("replication slot %q does not exist: let the source create it (WithCreateSlot; weir run cdc does)", s.cfg.slot)
	}
	rc, err := s.replicationConn(ctx)
	if err != nil {
		return err
	}
	defer rc.Close(context.WithoutCancel(ctx))
	// The intent first: a process killed while the server creates the
	// slot, or before the record below, leaves the slot's name to the
	// job's next fresh start (slotrecord.go).
	s.writeRecord(0)
	stop := s.watchSlotCreation(ctx)
	res, err := pglogrepl.CreateReplicationSlot(ctx, rc, s.cfg.slot, "pgoutput", pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
	stop()
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42710" { // duplicate_object: not ours
			s.dropRecord()
		}
		return fmt.Errorf("create replication slot %q: %w", s.cfg.slot, err)
	}
	start, err := parseLSN(res.ConsistentPoint)
	if err != nil {
		return fmt.Errorf("create replication slot %q: %w", s.cfg.slot, err)
	}
	// The exported snapshot lives until the replication connection runs
	// its next command; read what it sees now.
	exported, err := s.exportedSnapshot(ctx, res.SnapshotName)
	if err != nil {
		return fmt.Errorf("replication slot %q: %w", s.cfg.slot, err)
	}
	s.created.set(start)
	s.writeRecord(start)
	s.st = savedState{Slot: s.cfg.slot, StartLSN: start, Exported: exported, Done: start}
	for _, t := range s.tables {
		s.st.Tables = append(s.st.Tables, tableProgress{Table: t.qualified()})
	}
	s.log.Info("postgres cdc: created replication slot", "slot", s.cfg.slot, "start", res.ConsistentPoint, "tables", s.names)
	return nil
}

func (s *source) exportedSnapshot(ctx context.Context, name string) (pgSnapshot, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return pgSnapshot{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(name)); err != nil {
		return pgSnapshot{}, fmt.Errorf("import exported snapshot %s: %w", name, err)
	}
	var text string
	if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text").Scan(&text); err != nil {
		return pgSnapshot{}, fmt.Errorf("read exported snapshot: %w", err)
	}
	return parseSnapshot(text)
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// slowSlot is how long slot creation may take before the source looks
// at what it waits for.
const slowSlot = 2 * time.Second

// watchSlotCreation handles a slot creation that takes long: creating a
// logical slot waits until every transaction in progress on the whole
// server ended, and a prepared transaction nobody commits never does.
// One this job's Replica sink prepared before this attempt opened, on a
// fresh start, belongs to a checkpoint that never completed (else the
// job would restore): it is rolled back, in its database, as the sink's
// Open would do, which runs only after this source's Open. Others are
// logged. It uses the query connection, idle meanwhile; stop waits for
// it.
func (s *source) watchSlotCreation(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(slowSlot)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s.unblockSlotCreation(ctx)
			t.Reset(5 * slowSlot)
		}
	}()
	return func() { close(done); <-finished }
}

func (s *source) unblockSlotCreation(ctx context.Context) {
	type prep struct {
		gid, db string
		at      time.Time
	}
	rows, err := s.conn.Query(ctx, "SELECT gid, database, prepared FROM pg_prepared_xacts ORDER BY prepared")
	if err != nil {
		return
	}
	var ps []prep
	for rows.Next() {
		var p prep
		if rows.Scan(&p.gid, &p.db, &p.at) == nil {
			ps = append(ps, p)
		}
	}
	rows.Close()
	var others []string
	for _, p := range ps {
		if !strings.HasPrefix(p.gid, replicaPrefix(s.job)) || !p.at.Before(s.opened) {
			others = append(others, p.gid+" (database "+p.db+")")
			continue
		}
		if err := rollbackPreparedIn(ctx, s.connString, p.db, p.gid); err != nil {
			s.log.Warn("postgres cdc: rolling back a prepared transaction an earlier attempt of this job left failed", "gid", p.gid, "database", p.db, "err", err)
			continue
		}
		s.log.Info("postgres cdc: rolled back a prepared transaction an earlier attempt of this job left before any checkpoint completed", "gid", p.gid, "database", p.db)
	}
	if len(others) > 0 {
		s.log.Warn("postgres cdc: creating the replication slot waits for the transactions in progress on the server to end; a prepared transaction blocks it until it is committed or rolled back (COMMIT PREPARED / ROLLBACK PREPARED in its database)", "slot", s.cfg.slot, "prepared", others)
	}
}

// rollbackPreparedIn rolls back prepared transaction gid in database db
// of the server connString names.
func rollbackPreparedIn(ctx context.Context, connString, db, gid string) error {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return err
	}
	cfg.Database = db
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	_, err = c.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(gid))
	if isUndefined(err) {
		return nil
	}
	return err
}

package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// createMarkerTable creates the marker table and its lookup index if the
// table is absent.
func createMarkerTable(ctx context.Context, conn *pgx.Conn, cfg config, markers pgx.Identifier) error {
	name := markers.Sanitize()
	index := pgx.Identifier{markers[len(markers)-1] + "_sink_seq"}.Sanitize()
	return createIfAbsent(ctx, conn, cfg, name, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+name+` (
	gid text PRIMARY KEY,
	sink text NOT NULL,
	subtask integer NOT NULL,
	seq bigint NOT NULL,
	target text NOT NULL,
	rows bigint NOT NULL,
	prepared_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create marker table %s: %w; let the sink's user create tables, or create it beforehand", name, err)
		}
		if _, err := tx.Exec(ctx, "CREATE INDEX "+index+" ON "+name+" (sink, subtask, seq)"); err != nil {
			return fmt.Errorf("create index on marker table %s: %w", name, err)
		}
		return nil
	})
}

// cleanUp runs at Open. It rolls back the prepared transactions of this
// sink that are left over from earlier attempts and that the restored
// checkpoint does not list, prunes old marker rows, and returns the
// sequence number to continue from: after every id this subtask has used,
// so a new id never names an old transaction.
//
// Which leftovers are this subtask's to roll back: those of old subtask j
// with j mod parallelism == subtask. The two-phase-commit operator keeps
// one state element per subtask and a restore at another parallelism deals
// the elements out round-robin, so old subtask j's handles come to new
// subtask j mod parallelism, and only that one may decide which of j's
// transactions are garbage: the others may be about to commit one of them.
// If a restored handle contradicts this (the engine changed), the sink
// rolls back nothing rather than risk a committed checkpoint's data.
func (s *exactlyOnce[T]) cleanUp(ctx context.Context, parallelism int, restored []Txn) (uint64, error) {
	var next uint64
	keep := make(map[string]bool, len(restored))
	safe := true
	for _, t := range restored {
		keep[t.GID] = true
		j, seq, ok := parseGID(s.sink, t.GID)
		if !ok || j%parallelism != s.subtask {
			s.log.Warn("postgres sink: a restored transaction belongs to another subtask's share; leaving leftover prepared transactions alone",
				"sink", s.sink, "subtask", s.subtask, "parallelism", parallelism, "gid", t.GID)
			safe = false
		}
		if ok && j == s.subtask {
			next = max(next, seq+1)
		}
	}
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	rows, err := s.control.Query(ctx, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)", s.sink+":")
	if err != nil {
		return 0, fmt.Errorf("list prepared transactions on %s: %w", s.server, err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list prepared transactions on %s: %w", s.server, err)
	}
	for _, gid := range gids {
		j, seq, ok := parseGID(s.sink, gid)
		if !ok {
			continue
		}
		if j == s.subtask {
			next = max(next, seq+1)
		}
		if !safe || keep[gid] || j%parallelism != s.subtask {
			continue
		}
		if _, err := s.control.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(gid)); err != nil && sqlState(err) != undefinedObject {
			return 0, fmt.Errorf("roll back leftover prepared transaction %s on %s: %w", gid, s.server, err)
		}
		s.log.Info("postgres sink: rolled back a leftover prepared transaction no checkpoint covers", "sink", s.sink, "subtask", s.subtask, "gid", gid)
	}
	var maxSeq *int64
	if err := s.control.QueryRow(ctx, "SELECT max(seq) FROM "+s.markers.Sanitize()+" WHERE sink = $1 AND subtask = $2", s.sink, s.subtask).Scan(&maxSeq); err != nil {
		return 0, fmt.Errorf("read the newest marker of %s/%d in %s: %w", s.sink, s.subtask, s.cfg.markerTable, err)
	}
	if maxSeq != nil {
		next = max(next, uint64(*maxSeq)+1)
	}
	if next > s.cfg.markerRetention {
		if _, err := s.control.Exec(ctx, "DELETE FROM "+s.markers.Sanitize()+" WHERE sink = $1 AND subtask = $2 AND seq < $3",
			s.sink, s.subtask, int64(next-s.cfg.markerRetention)); err != nil {
			return 0, fmt.Errorf("prune old markers of %s/%d in %s: %w", s.sink, s.subtask, s.cfg.markerTable, err)
		}
	}
	return next, nil
}

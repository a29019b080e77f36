package postgrescdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/weirstream/weir"
)

// ReplicaTxn is the handle of one replica sink transaction, what the
// two-phase-commit operator stores in checkpoints: the id it is prepared
// under.
type ReplicaTxn struct {
	GID string
}

// markerTable records the ids of committed replica transactions, written
// inside each transaction: after a crash a missing prepared transaction
// whose marker exists was committed, one without was lost.
const markerTable = "weir_cdc_commits"

// stagingTable holds the changes of prepared and of committed but not
// yet applied transactions (see Write and apply).
const stagingTable = "weir_cdc_staging"

// Replica returns a factory of exactly-once sinks for
// weir.SinkToTransactional that apply a changelog to same-named tables in
// the database of connString: snapshot rows, inserts and updates as
// upserts by primary key, deletes by primary key. A table that does not
// exist is created with the change's columns and primary key. A column
// that appears in the changelog (added at the source) is added to the
// table (outside the open transaction: when that transaction already
// wrote the table the sink fails once and adds it on the restart); a
// column dropped at the source stays in the replica and is NULL in rows
// inserted after. Each checkpoint interval is one transaction, prepared
// at the barrier (PREPARE TRANSACTION) and committed when the checkpoint
// completes; the server must allow prepared transactions
// (max_prepared_transactions > 0). Run it with parallelism 1, after the
// source (one transaction order).
func Replica(connString string) func() weir.TwoPhaseCommitSink[Change, ReplicaTxn] {
	return replicaWith(connString, replicaConfig{})
}

func replicaWith(connString string, o replicaConfig) func() weir.TwoPhaseCommitSink[Change, ReplicaTxn] {
	return func() weir.TwoPhaseCommitSink[Change, ReplicaTxn] {
		return &replica{connString: connString, o: o}
	}
}

// replicaConfig holds what tests set.
type replicaConfig struct {
	journal string // also append every applied change to this table
}

// replicaTable is what the sink knows of a replica table.
// replicaPrefix starts the gid of every replica sink transaction of a
// job.
func replicaPrefix(job string) string { return "weircdc:" + job + ":" }

type replicaTable struct {
	cols map[string]bool
	keys []string
}

type replica struct {
	connString string
	o          replicaConfig

	log     *slog.Logger
	prefix  string // "weircdc:<job>:<uid>:" of every gid
	data    *pgx.Conn
	control *pgx.Conn
	types   *pgtype.Map
	names   map[typeKey]string // column type → SQL name
	tables  map[string]*replicaTable
	cur     ReplicaTxn
	begun   bool
	nonce   string
	seq     uint64
}

type typeKey struct {
	oid uint32
	mod int32
}

func (r *replica) Open(ctx context.Context, rc *weir.RuntimeContext, restored []ReplicaTxn) (err error) {
	r.log = rc.Logger()
	r.prefix = replicaPrefix(rc.JobName()) + rc.UID() + ":"
	if len(r.prefix) > 120 {
		return weir.Unrecoverable(fmt.Errorf("postgres replica sink %q: job name and uid make a transaction id prefix of %d bytes (at most 120): shorten them", rc.UID(), len(r.prefix)))
	}
	// A new nonce per attempt: gids are never reused, so a marker can
	// only be the marker of its own transaction.
	r.nonce = strconv.FormatInt(time.Now().UnixNano(), 36)
	r.types = pgtype.NewMap()
	r.names = map[typeKey]string{}
	r.tables = map[string]*replicaTable{}
	defer func() {
		if err != nil {
			r.Close(ctx)
		}
	}()
	if r.data, err = pgx.Connect(ctx, r.connString); err != nil {
		return fmt.Errorf("postgres replica sink: connect: %w", err)
	}
	if r.control, err = pgx.Connect(ctx, r.connString); err != nil {
		return fmt.Errorf("postgres replica sink: connect: %w", err)
	}
	var n int
	if err := r.control.QueryRow(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&n); err != nil {
		return fmt.Errorf("postgres replica sink: %w", err)
	}
	if n == 0 {
		return weir.Unrecoverable(fmt.Errorf("postgres replica sink: the server has max_prepared_transactions = 0, and the exactly-once sink prepares one transaction per checkpoint: set max_prepared_transactions to at least 2 in postgresql.conf and restart the server"))
	}
	for _, sql := range []string{
		"CREATE TABLE IF NOT EXISTS " + markerTable + " (gid text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())",
		"CREATE TABLE IF NOT EXISTS " + stagingTable + " (id bigserial PRIMARY KEY, sink text NOT NULL, change jsonb NOT NULL)",
	} {
		if _, err := r.control.Exec(ctx, sql); err != nil {
			return fmt.Errorf("postgres replica sink: %s: %w", sql, err)
		}
	}
	if r.o.journal != "" {
		if _, err := r.control.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+pgx.Identifier{r.o.journal}.Sanitize()+" (n bigserial PRIMARY KEY, op text, tbl text, lsn text, key text, row text)"); err != nil {
			return fmt.Errorf("postgres replica sink: journal: %w", err)
		}
	}
	// Prepared transactions of this sink that the restored checkpoint
	// does not hold were never part of a completed checkpoint: roll
	// them back.
	keep := map[string]bool{}
	for _, t := range restored {
		keep[t.GID] = true
	}
	rows, err := r.control.Query(ctx, "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1) AND database = current_database()", r.prefix)
	if err != nil {
		return fmt.Errorf("postgres replica sink: list prepared transactions: %w", err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres replica sink: list prepared transactions: %w", err)
	}
	for _, g := range gids {
		if !keep[g] {
			if _, err := r.control.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(g)); err != nil && !isUndefined(err) {
				return fmt.Errorf("postgres replica sink: roll back leftover %s: %w", g, err)
			}
		}
	}
	// Staged changes of committed transactions that a crash kept from
	// being applied.
	return r.apply(ctx)
}

func (r *replica) Begin(context.Context) (ReplicaTxn, error) {
	r.seq++
	r.cur = ReplicaTxn{GID: r.prefix + r.nonce + ":" + strconv.FormatUint(r.seq, 10)}
	r.begun = false
	return r.cur, nil
}

// stagedChange is a change as the staging table holds it: values as
// their PostgreSQL text, so that any column type survives the trip.
type stagedChange struct {
	Op     string             `json:"op"`
	Table  string             `json:"table"`
	LSN    string             `json:"lsn"`
	Cols   []stagedColumn     `json:"cols"`
	Before map[string]*string `json:"before,omitempty"`
	After  map[string]*string `json:"after,omitempty"`
}

type stagedColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Key  bool   `json:"key,omitempty"`
	// Missing: what rows older than the column read for it (Column's
	// Missing); absent in changes staged before weir knew of it.
	Missing *string `json:"missing,omitempty"`
}

// Write stages the changes in the open transaction. Staging only
// inserts rows, so it never waits for a lock a prepared transaction
// holds: applying the changes to the replica tables directly would wait
// for the previous checkpoint's prepared transaction on a row both
// touch, and that transaction is only committed by this same task once
// its checkpoint completes.
func (r *replica) Write(ctx context.Context, txn ReplicaTxn, batch []Change) error {
	if txn.GID != r.cur.GID {
		return fmt.Errorf("postgres replica sink: write to %s, the open transaction is %s", txn.GID, r.cur.GID)
	}
	rows := make([][]any, 0, len(batch))
	for i := range batch {
		sc, err := r.stage(ctx, &batch[i])
		if err != nil {
			return err
		}
		b, err := json.Marshal(sc)
		if err != nil {
			return fmt.Errorf("postgres replica sink: encode change of %s: %w", batch[i].Table, err)
		}
		rows = append(rows, []any{r.prefix, string(b)})
	}
	if !r.begun {
		if _, err := r.data.Exec(ctx, "BEGIN"); err != nil {
			return fmt.Errorf("postgres replica sink: begin: %w", err)
		}
		r.begun = true
	}
	if _, err := r.data.CopyFrom(ctx, pgx.Identifier{stagingTable}, []string{"sink", "change"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("postgres replica sink: stage %d changes: %w", len(batch), err)
	}
	return nil
}

func (r *replica) stage(ctx context.Context, c *Change) (stagedChange, error) {
	sc := stagedChange{Op: string(rune(c.Op)), Table: c.Table, LSN: c.LSN.String()}
	for _, col := range c.Columns {
		typ, err := r.typeName(ctx, col)
		if err != nil {
			return sc, fmt.Errorf("postgres replica sink: table %s: %w", c.Table, err)
		}
		stc := stagedColumn{Name: col.Name, Type: typ, Key: col.Key}
		if col.HasMissing {
			stc.Missing = &col.Missing
		}
		sc.Cols = append(sc.Cols, stc)
	}
	var err error
	if sc.Before, err = r.texts(c.Columns, c.Before); err != nil {
		return sc, fmt.Errorf("postgres replica sink: table %s: %w", c.Table, err)
	}
	if sc.After, err = r.texts(c.Columns, c.After); err != nil {
		return sc, fmt.Errorf("postgres replica sink: table %s: %w", c.Table, err)
	}
	return sc, nil
}

// texts encodes a row's values in PostgreSQL's text format.
func (r *replica) texts(cols []Column, row Row) (map[string]*string, error) {
	if row == nil {
		return nil, nil
	}
	out := make(map[string]*string, len(row))
	for _, col := range cols {
		v, ok := row[col.Name]
		if !ok {
			continue
		}
		if v == nil {
			out[col.Name] = nil
			continue
		}
		if s, ok := v.(string); ok {
			out[col.Name] = &s
			continue
		}
		b, err := r.types.Encode(col.TypeOID, pgtype.TextFormatCode, v, nil)
		if err != nil {
			return nil, fmt.Errorf("column %q: encode %T: %w", col.Name, v, err)
		}
		s := string(b)
		out[col.Name] = &s
	}
	return out, nil
}

// typeName is the SQL type of a column: built-in types have the same
// oid in every database.
func (r *replica) typeName(ctx context.Context, col Column) (string, error) {
	k := typeKey{col.TypeOID, col.TypeMod}
	if n, ok := r.names[k]; ok {
		return n, nil
	}
	var typ *string
	if err := r.control.QueryRow(ctx, "SELECT format_type(oid, $2) FROM pg_type WHERE oid = $1", col.TypeOID, col.TypeMod).Scan(&typ); err != nil || typ == nil {
		return "", fmt.Errorf("column %q: type oid %d is not known in the replica database (a user-defined type?): create the type there: %v", col.Name, col.TypeOID, err)
	}
	r.names[k] = *typ
	return *typ, nil
}

func (r *replica) PreCommit(ctx context.Context, txn ReplicaTxn) error {
	if !r.begun {
		if _, err := r.data.Exec(ctx, "BEGIN"); err != nil {
			return fmt.Errorf("postgres replica sink: begin: %w", err)
		}
		r.begun = true
	}
	if _, err := r.data.Exec(ctx, "INSERT INTO "+markerTable+" (gid) VALUES ($1)", txn.GID); err != nil {
		return fmt.Errorf("postgres replica sink: marker of %s: %w", txn.GID, err)
	}
	if _, err := r.data.Exec(ctx, "PREPARE TRANSACTION "+quoteLiteral(txn.GID)); err != nil {
		return fmt.Errorf("postgres replica sink: prepare %s: %w", txn.GID, err)
	}
	r.begun = false
	return nil
}

// Commit commits the prepared transaction, which makes its staged
// changes visible, and applies them.
func (r *replica) Commit(ctx context.Context, txn ReplicaTxn) error {
	_, err := r.control.Exec(ctx, "COMMIT PREPARED "+quoteLiteral(txn.GID))
	if err != nil && !isUndefined(err) {
		return fmt.Errorf("postgres replica sink: commit %s: %w", txn.GID, err)
	}
	if err != nil {
		ok, merr := r.committed(ctx, txn)
		if merr != nil {
			return merr
		}
		if !ok {
			return fmt.Errorf("postgres replica sink: commit %s: %w", txn.GID, weir.ErrTransactionLost)
		}
	}
	return r.apply(ctx)
}

func (r *replica) Abort(ctx context.Context, txn ReplicaTxn) error {
	if txn.GID == r.cur.GID {
		if r.begun {
			r.begun = false
			if _, err := r.data.Exec(ctx, "ROLLBACK"); err != nil {
				return fmt.Errorf("postgres replica sink: roll back %s: %w", txn.GID, err)
			}
		}
		return nil
	}
	_, err := r.control.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(txn.GID))
	if err == nil {
		return nil
	}
	if !isUndefined(err) {
		return fmt.Errorf("postgres replica sink: roll back %s: %w", txn.GID, err)
	}
	ok, merr := r.committed(ctx, txn)
	if merr != nil {
		return merr
	}
	if ok {
		return fmt.Errorf("postgres replica sink: roll back %s: %w", txn.GID, weir.ErrAlreadyCommitted)
	}
	return nil
}

func (r *replica) committed(ctx context.Context, txn ReplicaTxn) (bool, error) {
	var ok bool
	if err := r.control.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+markerTable+" WHERE gid = $1)", txn.GID).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres replica sink: look up marker of %s: %w", txn.GID, err)
	}
	return ok, nil
}

// isUndefined: the prepared transaction does not exist.
func isUndefined(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42704"
}

func (r *replica) Close(ctx context.Context) error {
	cctx := context.WithoutCancel(ctx)
	if r.data != nil {
		r.data.Close(cctx)
		r.data = nil
	}
	if r.control != nil {
		r.control.Close(cctx)
		r.control = nil
	}
	return nil
}

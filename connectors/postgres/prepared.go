package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weirstream/weir"
)

// checkPreparedTransactions fails when the server's
// max_prepared_transactions (setting, as SHOW prints it) disables PREPARE
// TRANSACTION. The setting only changes with a restart, so no task restart
// can cure it: the error is unrecoverable and says how to enable it.
func checkPreparedTransactions(setting, server string) error {
	n, err := strconv.Atoi(setting)
	if err != nil {
		return fmt.Errorf("read max_prepared_transactions of %s: %q is not a number", server, setting)
	}
	if n > 0 {
		return nil
	}
	return weir.Unrecoverable(fmt.Errorf("PostgreSQL at %s has max_prepared_transactions = %d, which disables PREPARE TRANSACTION, and the exactly-once sink needs it: run ALTER SYSTEM SET max_prepared_transactions = 64 (at least twice the sink's parallelism) as a superuser, then restart the server (for example pg_ctlcluster <version> main restart, or systemctl restart postgresql); or use postgres.Upsert or postgres.AtLeastOnce, which do not need it", server, n))
}

// serverName is host:port/database of a connection, for messages.
func serverName(conn *pgx.Conn) string {
	c := conn.Config()
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// slotsExhausted reports whether err is PostgreSQL refusing PREPARE
// TRANSACTION because every one of its max_prepared_transactions slots is
// taken (SQLSTATE 53200, "maximum number of prepared transactions
// reached"). The server has then rolled the transaction back.
func slotsExhausted(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53200" && strings.Contains(pe.Message, "prepared transactions")
}

// slotsExhaustedError is PreCommit's error when PREPARE found no free slot:
// what happened to the transaction, who holds the slots and the two ways
// out. It stays recoverable: other clients may finish their prepared
// transactions, and the restart strategy bounds the retries, so a job
// whose server is too small fails, saying why, rather than hang.
func (s *exactlyOnce[T]) slotsExhaustedError(ctx context.Context, txn Txn, err error) error {
	held := ""
	need := 2 * s.parallelism
	ctx, cancel := s.cfg.op(ctx)
	defer cancel()
	var limit, all, ours int
	if qerr := s.control.QueryRow(ctx, "SELECT current_setting('max_prepared_transactions')::int, count(*), count(*) FILTER (WHERE starts_with(gid, $1)) FROM pg_prepared_xacts",
		s.sink+":").Scan(&limit, &all, &ours); qerr == nil {
		held = fmt.Sprintf(" (max_prepared_transactions = %d; %d are prepared, %d of them by this sink)", limit, all, ours)
		need += all - ours
	}
	return fmt.Errorf("postgres sink %s/%d: prepare %s on %s: every prepared-transaction slot of the server is taken%s, so PostgreSQL rolled the transaction back and the checkpoint cannot complete; "+
		"raise max_prepared_transactions to at least %d (twice the sink's parallelism %d, plus the transactions others keep prepared) with ALTER SYSTEM SET max_prepared_transactions = %d as a superuser and restart the server, "+
		"or commit or roll back (COMMIT PREPARED / ROLLBACK PREPARED) the transactions other clients left prepared (SELECT gid, owner, database, prepared FROM pg_prepared_xacts): %w",
		s.sink, s.subtask, txn.GID, s.server, held, need, s.parallelism, max(need, 64), err)
}

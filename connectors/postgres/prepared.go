package postgres

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
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

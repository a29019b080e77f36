package postgres

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures the sinks ExactlyOnce, Upsert and AtLeastOnce return.
// Options a sink does not use are ignored by it.
type Option struct {
	apply func(*config)
}

type config struct {
	createTable     string // column definitions; "" leaves the table alone
	batchRows       int
	timeout         time.Duration
	connectTimeout  time.Duration
	resolveTimeout  time.Duration
	prefix          string
	prefixSet       bool
	markerTable     string
	markerRetention uint64
	logger          *slog.Logger
}

func defaultConfig() config {
	return config{
		batchRows:       10_000,
		timeout:         time.Minute,
		connectTimeout:  10 * time.Second,
		resolveTimeout:  time.Minute,
		prefix:          "weir",
		markerTable:     "weir_sink_commits",
		markerRetention: 10_000,
	}
}

func newConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithCreateTable makes the sink create its table at Open if it does not
// exist, as CREATE TABLE IF NOT EXISTS table (columnDefs); for example
// "i bigint, account bigint, count bigint, total bigint". For Upsert the
// definitions must make the key columns unique ("…, primary key (account)").
// Without it the table must exist.
func WithCreateTable(columnDefs string) Option {
	return Option{func(c *config) { c.createTable = columnDefs }}
}

// WithBatchRows sets how many rows a sink buffers before it sends them
// (one COPY, or one multi-row INSERT for Upsert); default 10,000. Values
// below 1 are raised to 1.
func WithBatchRows(n int) Option {
	return Option{func(c *config) { c.batchRows = max(n, 1) }}
}

// WithTimeout bounds every statement and round trip the sink makes
// (default 1 minute), so that a hung server fails the task instead of
// stalling it. Values of 0 or below disable the bound.
func WithTimeout(d time.Duration) Option {
	return Option{func(c *config) { c.timeout = d }}
}

// WithConnectTimeout bounds establishing a connection (default 10 s) when
// the connection string does not set connect_timeout.
func WithConnectTimeout(d time.Duration) Option {
	return Option{func(c *config) { c.connectTimeout = d }}
}

// WithResolveTimeout bounds how long the exactly-once sink's Commit and
// Abort keep trying when COMMIT PREPARED or ROLLBACK PREPARED gets no
// answer because the connection broke or the server is unreachable
// (restarting, crashed, network down); default 1 minute. Meanwhile they
// reconnect with backoff (50 ms doubling to 1 s), ask pg_prepared_xacts and
// the marker table what became of the transaction, and finish it if it is
// still prepared. Past the bound the task fails with an error wrapping
// ErrOutcomeUnknown (or saying the database was unreachable) that names the
// transaction and the server, and the restore of the checkpoint finishes
// the transaction. Values of 0 or below remove the bound: only the task's
// cancellation stops the retries.
func WithResolveTimeout(d time.Duration) Option {
	return Option{func(c *config) { c.resolveTimeout = d }}
}

// WithTransactionPrefix sets the first part of the exactly-once sink's
// prepared-transaction ids, "<prefix>:<uid>:<subtask>:<seq>" (default: the
// job's name, or "weir" if it has other characters). Two jobs writing to
// one database with the same operator uid must use different prefixes:
// each sink rolls back prepared transactions under its own prefix and uid
// that its checkpoint does not know. Letters, digits, '_', '-' and '.'
// only.
func WithTransactionPrefix(p string) Option {
	return Option{func(c *config) { c.prefix, c.prefixSet = p, true }}
}

// WithMarkerTable names the table where the exactly-once sink records, in
// each prepared transaction, that the transaction exists (default
// "weir_sink_commits"; created if absent). A marker row is visible exactly
// when its transaction committed, which makes Commit idempotent.
func WithMarkerTable(name string) Option {
	return Option{func(c *config) { c.markerTable = name }}
}

// WithMarkerRetention sets how many of its newest marker rows each sink
// subtask keeps (default 10,000, one per checkpoint; at least 100); Open
// deletes older ones. Commit of a restored transaction whose marker was
// deleted reports it lost, and a restore from a checkpoint older than that
// many transactions can no longer detect that it would duplicate committed
// output.
func WithMarkerRetention(n uint64) Option {
	return Option{func(c *config) { c.markerRetention = max(n, 100) }}
}

// WithLogger sets the logger for the sink's housekeeping (rolled back
// leftovers); by default the operator's logger is used.
func WithLogger(l *slog.Logger) Option {
	return Option{func(c *config) { c.logger = l }}
}

// checkName accepts the characters allowed in a transaction prefix and an
// operator uid. They end up in prepared-transaction ids, which are SQL
// string literals parsed back by splitting at ':', so ':' and quotes are
// out.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s; give the sink one", what)
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return fmt.Errorf("%s %q contains %q; use letters, digits, '_', '-' and '.'", what, s, c)
		}
	}
	return nil
}

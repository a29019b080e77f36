package postgrescdc

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Source.
type Option struct {
	apply func(*config)
}

type config struct {
	slot           string
	publication    string
	createSlot     bool
	createPub      bool
	chunkRows      int
	statusInterval time.Duration
	idleTimeout    time.Duration
	pollWait       time.Duration
	reg            prometheus.Registerer
	logger         *slog.Logger
	recordDir      string
	// snapshotParallelism is WithSnapshotParallelism's n; planner marks
	// the source of a parallel snapshot (parallel.go).
	snapshotParallelism int
	planner             bool
	snapshotAhead       int // ranges per reader beyond completed checkpoints (planner.ahead); 0: the default
	// afterChunk, if set, runs after a snapshot chunk was read (tests
	// inject failures there); see export_test.go.
	afterChunk func(table string, chunk int) error
	// onSnapshot and onConfirm, if set, see each checkpoint's position
	// and each position the slot is told to confirm (tests).
	onSnapshot func(id int64, st savedState)
	onConfirm  func(id int64, lsn uint64)
	onComplete func(id int64)
	onSuppress func() // a log change a snapshot chunk had seen
}

func defaultConfig() config {
	return config{
		slot:           "weir_cdc",
		publication:    "weir_cdc",
		chunkRows:      8192,
		statusInterval: 10 * time.Second,
		pollWait:       100 * time.Millisecond,
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

// WithSlotRecord keeps, under dir/JOB/ (JOB is the job's name), a record
// of the slot a run created. A process killed after creating its slot and
// before its first checkpoint completed leaves a slot no checkpoint
// knows; a fresh start of the same job finds the record, sees that the
// slot never confirmed past its start point (so nothing depends on it),
// drops it and creates it anew. Without a matching record a fresh start
// refuses an existing slot, since it may be another job's. dir must be
// private to the job's runs (weir run cdc uses its --state-dir); an
// unwritable dir only loses the convenience.
func WithSlotRecord(dir string) Option { return Option{func(c *config) { c.recordDir = dir }} }

// WithSlot names the logical replication slot (default "weir_cdc"). One
// slot serves one job: a second reader of the same slot is refused.
func WithSlot(name string) Option { return Option{func(c *config) { c.slot = name }} }

// WithPublication names the publication the slot streams (default
// "weir_cdc").
func WithPublication(name string) Option { return Option{func(c *config) { c.publication = name }} }

// WithCreateSlot makes the source create the slot on a fresh start when it
// does not exist. Without it a missing slot is an error naming the SQL to
// create it. The source never drops a slot: drop it with
// pg_drop_replication_slot once the job is retired, or the server keeps
// WAL for it forever.
func WithCreateSlot() Option { return Option{func(c *config) { c.createSlot = true }} }

// WithCreatePublication makes the source create the publication FOR TABLE
// the captured tables when it does not exist. It never alters or drops an
// existing one.
func WithCreatePublication() Option { return Option{func(c *config) { c.createPub = true }} }

// WithChunkRows sets how many rows one snapshot chunk reads (default
// 8192). A chunk is the unit of snapshot progress in checkpoints.
func WithChunkRows(n int) Option {
	return Option{func(c *config) {
		if n > 0 {
			c.chunkRows = n
		}
	}}
}

// WithStatusInterval sets how often the source sends a standby status
// update while it streams (default 10 s; the server's
// wal_sender_timeout is 60 s by default).
func WithStatusInterval(d time.Duration) Option {
	return Option{func(c *config) {
		if d > 0 {
			c.statusInterval = d
		}
	}}
}

// WithIdleTimeout makes the source end (io.EOF, the job then FINISHES)
// once it streamed the log for d without a change to a captured table.
// Zero (the default) streams forever.
func WithIdleTimeout(d time.Duration) Option { return Option{func(c *config) { c.idleTimeout = d }} }

// WithMetrics also registers the source's metrics (replication lag,
// retained WAL, snapshot chunks and rows) on reg, for a process that
// serves reg itself (weir run cdc --metrics-address). Without it the
// replication lag and retained WAL gauges still reach the JobManager's
// /metrics with the job's other task metrics (weir.RuntimeContext.SetGauge).
func WithMetrics(reg prometheus.Registerer) Option { return Option{func(c *config) { c.reg = reg }} }

// WithLogger sets the logger; nil (the default) uses the operator's.
func WithLogger(l *slog.Logger) Option { return Option{func(c *config) { c.logger = l }} }

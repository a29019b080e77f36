package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
)

const cdcLong = `cdc captures the changes of PostgreSQL tables (--tables, in the database
of --source) and applies them exactly once to a replica: an initial
snapshot of the tables, read in primary key chunks, then every insert,
update and delete from the write-ahead log through a logical replication
slot (--slot, created on the first run and never dropped: drop it with
pg_drop_replication_slot when the replica is retired; a run killed
before its first checkpoint recorded its slot in --state-dir, and the
next run creates it anew). The source's role
needs the REPLICATION privilege and the server wal_level = logical.

--sink postgres://USER@HOST:PORT/DB applies the changelog to same-named
tables there (created if absent; upserts and deletes by primary key; the
server needs max_prepared_transactions > 0). --sink DIR (or file://DIR)
writes the changelog as Debezium-style JSON lines, one change event per
line, into an exactly-once file sink; --sink kafka://HOST:PORT/TOPIC as
Debezium-style records (key: the primary key as JSON; value: the change
event) through the exactly-once Kafka sink.

--idle-timeout D ends the job FINISHED once no change arrived for D; then
--verify compares every replica table with its source table row for row.
A run started again with the same --state-dir resumes from its last
checkpoint. --parallelism N reads the initial snapshot with N readers; the log is
read by one subtask whatever N, and a run may resume at another N. See
docs/connectors/postgres-cdc.md.`

// cdcFlags are cdc's flags: one value per command line or build.
type cdcFlags struct {
	jf          jobFlags
	source      string
	tables      []string
	sink        string
	slot        string
	publication string
	idle        time.Duration
	chunkRows   int
	verify      bool
	metricsAddr string
	// reg holds the source's gauges; --metrics-address serves it. (The
	// REST API's /metrics has no place for a connector's own metrics
	// yet.)
	reg *prometheus.Registry
}

// cdcJob is `weir run cdc`.
func cdcJob() app.Job {
	return app.Job{
		Name:  "cdc",
		Short: "Capture PostgreSQL table changes, exactly once into a replica or files",
		Long:  cdcLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			c := &cdcFlags{reg: prometheus.NewRegistry()}
			fs.StringVar(&c.source, "source", "", "the database to capture: postgres://USER@HOST:PORT/DB")
			fs.StringSliceVar(&c.tables, "tables", nil, "the tables to capture, comma-separated (schema.table or table)")
			fs.StringVar(&c.sink, "sink", "", "postgres://USER@HOST:PORT/DB for replica tables, a folder (DIR, file://DIR) for Debezium JSON lines, or kafka://HOST:PORT/TOPIC for Debezium records")
			fs.StringVar(&c.slot, "slot", "weir_cdc", "the logical replication slot")
			fs.StringVar(&c.publication, "publication", "", "the publication the slot streams (default: the slot's name); created for --tables if absent")
			fs.DurationVar(&c.idle, "idle-timeout", 0, "end the job FINISHED once no change arrived for this long (0: run until cancelled)")
			fs.IntVar(&c.chunkRows, "chunk-rows", 8192, "rows per snapshot chunk (the unit of snapshot progress in checkpoints)")
			fs.BoolVar(&c.verify, "verify", false, "after the job FINISHED, compare every replica table with its source table row for row (needs a postgres --sink and --idle-timeout)")
			fs.StringVar(&c.metricsAddr, "metrics-address", "", "serve the source's metrics (replication lag, retained WAL) at http://ADDRESS/metrics in a local run, e.g. 127.0.0.1:9249")
			c.jf.register(fs, "1s")
			app.MarkClientOnly(fs, "verify")
			app.MarkClientOnly(fs, "metrics-address")
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error { return c.configure(fs, cfg) },
				Build:     c.build,
				Execute:   c.execute,
				Summary:   c.jf.faultSummary,
				Finish:    c.finish,
			}
		},
	}
}

// cdcSink is a parsed --sink.
type cdcSink struct {
	conn    string   // postgres
	dir     string   // files
	brokers []string // kafka
	topic   string   // kafka
}

func parseCDCSink(raw string) (cdcSink, error) {
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		if _, err := postgresDB(raw); err != nil {
			return cdcSink{}, usagef("--sink %q: %v", raw, err)
		}
		return cdcSink{conn: raw}, nil
	}
	if strings.HasPrefix(raw, "kafka://") {
		ep, err := parseEndpoint("--sink", raw)
		if err != nil {
			return cdcSink{}, err
		}
		return cdcSink{brokers: ep.brokers, topic: ep.topic}, nil
	}
	if strings.Contains(raw, "://") && !strings.HasPrefix(raw, "file://") {
		return cdcSink{}, usagef("--sink %q: want postgres://USER@HOST:PORT/DB, kafka://HOST:PORT/TOPIC or a folder (DIR or file://DIR)", raw)
	}
	return cdcSink{dir: strings.TrimPrefix(raw, "file://")}, nil
}

// postgresDB returns the database a postgres:// URL names.
func postgresDB(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	db := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || db == "" || strings.Contains(db, "/") {
		return "", fmt.Errorf("want postgres://USER@HOST:PORT/DB")
	}
	if u.Query().Has("table") {
		return "", fmt.Errorf("cdc names its tables with --tables, not ?table=")
	}
	return db, nil
}

func (c *cdcFlags) configure(fs *pflag.FlagSet, cfg *weir.Config) error {
	if c.source == "" {
		return usagef("--source is required (postgres://USER@HOST:PORT/DB)")
	}
	if !strings.HasPrefix(c.source, "postgres://") && !strings.HasPrefix(c.source, "postgresql://") {
		return usagef("--source %q: want postgres://USER@HOST:PORT/DB", c.source)
	}
	if _, err := postgresDB(c.source); err != nil {
		return usagef("--source %q: %v", c.source, err)
	}
	if len(c.tables) == 0 {
		return usagef("--tables is required (comma-separated table names)")
	}
	for _, t := range c.tables {
		if t == "" || strings.Count(t, ".") > 1 {
			return usagef("--tables: %q is not a table name (table or schema.table)", t)
		}
	}
	if c.sink == "" {
		return usagef("--sink is required (postgres://USER@HOST:PORT/DB or a folder)")
	}
	sink, err := parseCDCSink(c.sink)
	if err != nil {
		return err
	}
	if sink.dir != "" {
		if err := checkWritableDir("--sink", sink.dir); err != nil {
			return err
		}
	}
	if sink.conn != "" && sameDatabase(sink.conn, c.source) {
		return usagef("--sink names the --source database: the replica tables would be the captured tables; give another database")
	}
	if c.slot == "" {
		return usagef("--slot is empty")
	}
	if c.idle < 0 {
		return usagef("--idle-timeout must not be negative, got %s", c.idle)
	}
	if c.chunkRows < 1 {
		return usagef("--chunk-rows must be at least 1, got %d", c.chunkRows)
	}
	if err := refuseIneffective(fs,
		ineffective{flag: "verify", when: c.verify && sink.conn == "", where: "with a folder or kafka:// --sink",
			instead: "--verify compares replica tables with the source; give a postgres --sink, or drop --verify"},
		ineffective{flag: "verify", when: c.verify && c.idle == 0, where: "without --idle-timeout",
			instead: "the job never FINISHES without --idle-timeout, so nothing would be verified; add --idle-timeout D"},
		verifyDetached(fs),
	); err != nil {
		return err
	}
	if err := c.jf.configure(fs, cfg); err != nil {
		return err
	}
	return c.jf.quickRestarts(cfg)
}

// sameDatabase reports whether two postgres URLs name the same database
// on the same host and port.
func sameDatabase(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host && strings.TrimPrefix(ua.Path, "/") == strings.TrimPrefix(ub.Path, "/")
}

// execute runs the job locally: it creates a kafka:// --sink's topic
// (one partition) if absent, and serves the source's metrics meanwhile
// if asked to.
func (c *cdcFlags) execute(ctx context.Context, env *weir.Env, jobName string) error {
	if sink, err := parseCDCSink(c.sink); err == nil && sink.topic != "" {
		// One partition: the changelog keeps its commit order.
		if err := demoEnsureTopic(ctx, endpoint{scheme: "kafka", brokers: sink.brokers, topic: sink.topic}, 1); err != nil {
			return err
		}
	}
	if c.metricsAddr == "" {
		return env.Execute(ctx, jobName)
	}
	ln, err := net.Listen("tcp", c.metricsAddr)
	if err != nil {
		return fmt.Errorf("--metrics-address %s: %w", c.metricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "cdc metrics at http://%s/metrics\n", ln.Addr())
	return env.Execute(ctx, jobName)
}

func (c *cdcFlags) finish(ctx context.Context, _ app.Outcome) error {
	sink, err := parseCDCSink(c.sink)
	if err != nil {
		return err
	}
	// A FINISHED job is not resumed (its checkpoints are gone), and the
	// slot would hold WAL for nobody: say so, without dropping it.
	fmt.Fprintf(os.Stderr, "the replication slot %s stays on the source and keeps WAL from the last checkpoint; if this capture is done, drop it: SELECT pg_drop_replication_slot('%s'); a run from scratch (--rerun) needs it dropped too\n", c.slot, c.slot)
	if sink.dir != "" {
		fmt.Fprintf(os.Stderr, "changelog of %s in %s\n", strings.Join(c.tables, ", "), sink.dir)
		return nil
	}
	if sink.topic != "" {
		fmt.Fprintf(os.Stderr, "changelog of %s in kafka topic %s\n", strings.Join(c.tables, ", "), sink.topic)
		return nil
	}
	if !c.verify {
		return nil
	}
	rows, diffs, err := verifyReplica(ctx, c.source, sink.conn, c.tables)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(diffs) > 0 {
		for _, d := range diffs {
			fmt.Println(d)
		}
		return fmt.Errorf("verify: the replica differs from the source (%d differences shown above)", len(diffs))
	}
	fmt.Printf("verify: replica equals source exactly (%d rows in %d tables)\n", rows, len(c.tables))
	return nil
}

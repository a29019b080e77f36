package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/kafka"
	"github.com/weirstream/weir/connectors/postgrescdc"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// build declares source → sink: the replica sink for a postgres --sink,
// Debezium JSON lines into the exactly-once file sink for a folder.
func (c *cdcFlags) build(env *weir.Env) error {
	c.jf.apply(env, 0)
	pub := c.publication
	if pub == "" {
		pub = c.slot
	}
	opts := []postgrescdc.Option{
		postgrescdc.WithSlot(c.slot), postgrescdc.WithPublication(pub),
		postgrescdc.WithCreateSlot(), postgrescdc.WithCreatePublication(),
		postgrescdc.WithChunkRows(c.chunkRows), postgrescdc.WithIdleTimeout(c.idle),
		postgrescdc.WithLogger(c.jf.logger()),
		postgrescdc.WithSnapshotParallelism(c.jf.parallelism),
	}
	if c.reg != nil {
		opts = append(opts, postgrescdc.WithMetrics(c.reg))
	}
	if dir := hooks.Config(env.Config()).String(config.CheckpointsDir); dir != "" && !strings.Contains(dir, "://") {
		// The job's own folder knows the slot a run created, so a run
		// killed before its first checkpoint does not leave a slot the
		// next run refuses.
		opts = append(opts, postgrescdc.WithSlotRecord(dir))
	}
	changes := postgrescdc.Capture(env, "cdc", c.source, c.tables, opts...)
	sink, err := parseCDCSink(c.sink)
	if err != nil {
		return err
	}
	if sink.conn != "" {
		weir.SinkToTransactional(changes, postgrescdc.Replica(sink.conn)).Name("replica").UID("replica").Parallelism(1)
		return nil
	}
	db, _ := postgresDB(c.source)
	origin := postgrescdc.DebeziumSource{Name: "weir", Database: db}
	if sink.topic != "" {
		cfg := env.Config()
		serialize := func(ch postgrescdc.Change, rec *kgo.Record) error {
			// Debezium's record key: the primary key columns.
			key, kv, j := map[string]any{}, ch.Key(), 0
			for _, col := range ch.Columns {
				if col.Key {
					key[col.Name] = kv[j]
					j++
				}
			}
			// A change that does not encode fails the job naming its
			// table (the sink adds itself, the topic and the position),
			// rather than reaching consumers as something else.
			var err error
			if rec.Key, err = json.Marshal(key); err != nil {
				return fmt.Errorf("key of a change of %s.%s: %w", ch.Schema, ch.Table, err)
			}
			if rec.Value, err = postgrescdc.MarshalDebezium(ch, origin, time.Now()); err != nil {
				return fmt.Errorf("change of %s.%s: %w", ch.Schema, ch.Table, err)
			}
			return nil
		}
		weir.SinkToTransactional(changes, kafka.ExactlyOnce(sink.brokers, sink.topic, serialize,
			kafka.WithTransactionalIDPrefix("weir-cdc-"+c.slot),
			kafka.WithCheckpointing(
				hooks.Config(cfg).Duration(config.CheckpointingInterval),
				hooks.Config(cfg).Duration(config.CheckpointingTimeout),
				max(hooks.Config(cfg).Duration(config.ExponentialDelayMaxBackoff), hooks.Config(cfg).Duration(config.FixedDelayDelay), hooks.Config(cfg).Duration(config.FailureRateDelay)),
			))).Name("kafka").UID("kafka").Parallelism(1)
		return nil
	}
	format := func(ch postgrescdc.Change, dst []byte) []byte {
		b, err := postgrescdc.MarshalDebezium(ch, origin, time.Now())
		if err != nil {
			// A value without a JSON form: keep the line, say so.
			b = fmt.Appendf(nil, `{"error":%q}`, err.Error())
		}
		return append(dst, b...) // the file sink ends the line
	}
	weir.SinkToTransactional(changes, file.ExactlyOnce(sink.dir, format)).Name("files").UID("files").Parallelism(1)
	return nil
}

// maxDiffs bounds the differences verify prints.
const maxDiffs = 20

// verifyReplica compares each captured table with its replica row for
// row, on the source table's columns in primary key order, as text. It
// returns the rows compared and the differences (at most maxDiffs).
func verifyReplica(ctx context.Context, source, replica string, tables []string) (int, []string, error) {
	src, err := pgx.Connect(ctx, source)
	if err != nil {
		return 0, nil, fmt.Errorf("connect to --source: %w", err)
	}
	defer src.Close(ctx)
	dst, err := pgx.Connect(ctx, replica)
	if err != nil {
		return 0, nil, fmt.Errorf("connect to --sink: %w", err)
	}
	defer dst.Close(ctx)
	total := 0
	var diffs []string
	for _, t := range tables {
		schema, name := "public", t
		if a, b, ok := strings.Cut(t, "."); ok {
			schema, name = a, b
		}
		cols, keys, err := tableColumns(ctx, src, schema, name)
		if err != nil {
			return 0, nil, fmt.Errorf("table %s: %w", t, err)
		}
		want, err := tableRows(ctx, src, pgx.Identifier{schema, name}.Sanitize(), cols, keys)
		if err != nil {
			return 0, nil, fmt.Errorf("source table %s: %w", t, err)
		}
		got, err := tableRows(ctx, dst, pgx.Identifier{name}.Sanitize(), cols, keys)
		if err != nil {
			return 0, nil, fmt.Errorf("replica table %s: %w", name, err)
		}
		total += len(want)
		for _, d := range diffRows(t, want, got) {
			if len(diffs) < maxDiffs {
				diffs = append(diffs, d)
			}
		}
	}
	return total, diffs, nil
}

// tableColumns lists a source table's columns and primary key columns.
func tableColumns(ctx context.Context, db *pgx.Conn, schema, name string) (cols, keys []string, err error) {
	rows, err := db.Query(ctx, `SELECT a.attname, coalesce(a.attnum = ANY(i.indkey), false) FROM pg_attribute a
		LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, pgx.Identifier{schema, name}.Sanitize())
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		var k bool
		if err := rows.Scan(&c, &k); err != nil {
			return nil, nil, err
		}
		cols = append(cols, c)
		if k {
			keys = append(keys, c)
		}
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("no primary key")
	}
	return cols, keys, rows.Err()
}

// tableRows reads a table as "key → row text", ordered by key.
func tableRows(ctx context.Context, db *pgx.Conn, ident string, cols, keys []string) (map[string]string, error) {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = "coalesce(" + pgx.Identifier{c}.Sanitize() + "::text, 'NULL')"
	}
	k := make([]string, len(keys))
	for i, c := range keys {
		k[i] = pgx.Identifier{c}.Sanitize() + "::text"
	}
	rows, err := db.Query(ctx, "SELECT concat_ws(',', "+strings.Join(k, ", ")+"), concat_ws('|', "+strings.Join(q, ", ")+") FROM "+ident)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var key, row string
		if err := rows.Scan(&key, &row); err != nil {
			return nil, err
		}
		out[key] = row
	}
	return out, rows.Err()
}

// diffRows lists the keys whose rows differ.
func diffRows(table string, want, got map[string]string) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("verify: %s key (%s): missing in the replica; source row %s", table, k, w))
		case g != w:
			out = append(out, fmt.Sprintf("verify: %s key (%s): replica row %s, source row %s", table, k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("verify: %s key (%s): in the replica only: %s", table, k, g))
		}
	}
	return out
}

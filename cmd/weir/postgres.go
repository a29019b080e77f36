package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/postgres"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// demoColumns are the demo table's columns, in the specified order.
var demoColumns = []string{"i", "account", "count", "total"}

// addPostgresSink adds the demo's exactly-once PostgreSQL sink; the table
// is created if absent.
func addPostgresSink(results weir.Stream[demo.Result], ep endpoint) error {
	row := func(r demo.Result, dst []any) []any {
		return append(dst, r.I, r.Account, r.Count, r.Total)
	}
	weir.SinkToTransactional(results, postgres.ExactlyOnce(ep.conn, ep.table, demoColumns, row,
		postgres.WithCreateTable("i bigint, account bigint, count bigint, total bigint"))).Name("postgres").UID("postgres")
	return nil
}

// readPostgresLines returns the demo table's rows as demo lines.
func readPostgresLines(ctx context.Context, ep endpoint) ([]string, error) {
	conn, err := pgx.Connect(ctx, ep.conn)
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", ep.table, err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT i, account, count, total FROM "+pgx.Identifier{ep.table}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", ep.table, err)
	}
	defer rows.Close()
	var lines []string
	var buf []byte
	for rows.Next() {
		var r demo.Result
		if err := rows.Scan(&r.I, &r.Account, &r.Count, &r.Total); err != nil {
			return nil, err
		}
		buf = r.AppendLine(buf[:0])
		lines = append(lines, string(buf))
	}
	return lines, rows.Err()
}

package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// planBounds splits table t's key space into ranges of about n rows: it
// walks the primary key index from one bound to the next (n-1 keys
// above the previous bound, then one). The ranges only need to be
// disjoint and to cover the key space; rows inserted after the walk fall
// in some range all the same (the last reaches +∞), so an uneven plan
// costs balance, never correctness.
func planBounds(ctx context.Context, conn *pgx.Conn, t tableInfo, n int) ([][]keyVal, error) {
	keys, params := keyExprs(t, 1)
	cols := make([]string, len(t.keys))
	for i, k := range t.keys {
		cols[i] = pgx.Identifier{k}.Sanitize()
	}
	order := strings.Join(keys, ", ")
	first := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s OFFSET %d LIMIT 1", strings.Join(cols, ", "), t.ident(), order, n-1)
	next := fmt.Sprintf("SELECT %s FROM %s WHERE (%s) > (%s) ORDER BY %s OFFSET %d LIMIT 1", strings.Join(cols, ", "), t.ident(), order, strings.Join(params, ", "), order, n-1)
	var bounds [][]keyVal
	for {
		sql, args := first, []any(nil)
		if len(bounds) > 0 {
			sql, args = next, keyArgs(t.kinds, bounds[len(bounds)-1])
		}
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return nil, fmt.Errorf("plan the snapshot of %s: %w", t.qualified(), err)
		}
		var k []keyVal
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("plan the snapshot of %s: %w", t.qualified(), err)
			}
			if k, err = keyOf(t.kinds, vals); err != nil {
				rows.Close()
				return nil, fmt.Errorf("plan the snapshot of %s: %w", t.qualified(), err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("plan the snapshot of %s: %w", t.qualified(), err)
		}
		if k == nil {
			return bounds, nil
		}
		bounds = append(bounds, k)
	}
}

// rangeQuery selects the rows of t above lower (all, if nil) up to and
// including upper (all, if nil).
func rangeQuery(t tableInfo, lower, upper []keyVal) (string, []any) {
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT * FROM %s", t.ident())
	var where []string
	var args []any
	if lower != nil {
		keys, params := keyExprs(t, 1)
		where = append(where, fmt.Sprintf("(%s) > (%s)", strings.Join(keys, ", "), strings.Join(params, ", ")))
		args = append(args, keyArgs(t.kinds, lower)...)
	}
	if upper != nil {
		keys, params := keyExprs(t, len(args)+1)
		where = append(where, fmt.Sprintf("(%s) <= (%s)", strings.Join(keys, ", "), strings.Join(params, ", ")))
		args = append(args, keyArgs(t.kinds, upper)...)
	}
	if len(where) > 0 {
		fmt.Fprintf(&b, " WHERE %s", strings.Join(where, " AND "))
	}
	return b.String(), args
}

// rangeOf returns the index of the planned range of a table with bounds
// that holds key k.
func rangeOf(kinds []keyKind, bounds [][]keyVal, k []keyVal) int {
	i, _ := slices.BinarySearchFunc(bounds, k, func(b []keyVal, k []keyVal) int {
		return compareKeys(kinds, b, k)
	})
	return i
}

// chunkID names range r of table t: the key of the edge from the
// planner to the snapshot readers (parallel.go).
func chunkID(t, r int) uint64 { return uint64(t)<<32 | uint64(uint32(r)) }

// directID is the edge key of a record the planner judged itself (a
// restored parallelism-1 position, parallel.go): a hash of its table
// and primary key with the top bit set, so that every record of one key
// takes one reader and one channel.
func directID(table int, k []keyVal) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	mix(uint64(table))
	for _, v := range k {
		mix(uint64(v.I))
		for i := 0; i < len(v.S); i++ {
			h ^= uint64(v.S[i])
			h *= 1099511628211
		}
		mix(uint64(len(v.S)))
	}
	return h | 1<<63
}

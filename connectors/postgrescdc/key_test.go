package postgrescdc

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestKeyOrderMatchesPostgres: for every key kind, the keys the source
// builds compare as PostgreSQL orders the column, and a value decoded
// from the snapshot (binary) and from the log (text, as pgoutput sends
// it) gives the same key: the log filter finds a change's chunk by
// comparing its key with the chunks' bounds, so a disagreement would
// attribute a change to the wrong chunk's snapshot.
func TestKeyOrderMatchesPostgres(t *testing.T) {
	dsn, _ := newDB(t)
	db := connect(t, dsn)
	ctx := context.Background()
	for _, tc := range []struct{ typ, format, values string }{
		{"bigint", "bigint", "SELECT (i * 7919 % 1000 - 500)::bigint FROM generate_series(1, 200) i"},
		{"uuid", "uuid", "SELECT md5(i::text)::uuid FROM generate_series(1, 200) i UNION ALL SELECT 'ffffffff-0000-0000-0000-000000000000'::uuid UNION ALL SELECT '00000000-0000-0000-0000-00000000000f'::uuid"},
		{"timestamptz", "timestamp with time zone", "SELECT timestamptz '1969-12-31 23:59:59.999999+00' + (i * 7919 % 1000 - 500) * interval '37 minutes 1 microsecond' FROM generate_series(1, 200) i"},
		{"timestamp", "timestamp without time zone", "SELECT timestamp '2026-03-29 01:30:00' + (i * 7919 % 1000 - 500) * interval '1 hour 3 microseconds' FROM generate_series(1, 200) i"},
		{"date", "date", "SELECT date '1900-01-01' + (i * 7919 % 1000) * 97 FROM generate_series(1, 200) i"},
	} {
		kind, err := keyKindOf("t", "c", tc.format)
		if err != nil {
			t.Fatal(err)
		}
		kinds := []keyKind{kind}
		rows, err := db.Query(ctx, "SELECT v, v::text FROM ("+tc.values+") x(v) ORDER BY 1")
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		m := pgtype.NewMap()
		var prev []keyVal
		n := 0
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			bin, err := keyOf(kinds, vals[:1])
			if err != nil {
				t.Fatalf("%s: %v", tc.typ, err)
			}
			oid := rows.FieldDescriptions()[0].DataTypeOID
			dt, _ := m.TypeForOID(oid)
			tv, err := dt.Codec.DecodeValue(m, oid, pgtype.TextFormatCode, []byte(vals[1].(string)))
			if err != nil {
				t.Fatalf("%s: decode %q: %v", tc.typ, vals[1], err)
			}
			txt, err := keyOf(kinds, []any{tv})
			if err != nil {
				t.Fatalf("%s: %v", tc.typ, err)
			}
			if compareKeys(kinds, bin, txt) != 0 {
				t.Errorf("%s %s: the snapshot's key %v and the log's %v differ", tc.typ, vals[1], bin, txt)
			}
			// The values are distinct: each sorts strictly after the last.
			if prev != nil && compareKeys(kinds, prev, bin) >= 0 {
				t.Errorf("%s: %s sorts after the previous value in PostgreSQL but not as a key", tc.typ, vals[1])
			}
			prev = bin
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil || n < 200 {
			t.Fatalf("%s: %d values, %v", tc.typ, n, err)
		}
		// The key goes back into a chunk query as the column's type.
		var back string
		if err := db.QueryRow(ctx, "SELECT $1::"+tc.typ+"::text", keyArgs(kinds, prev)...).Scan(&back); err != nil {
			t.Fatalf("%s: the last key as a query argument: %v", tc.typ, err)
		}
		var last string
		if err := db.QueryRow(ctx, "SELECT v::text FROM ("+tc.values+") x(v) ORDER BY x.v DESC LIMIT 1").Scan(&last); err != nil {
			t.Fatal(err)
		}
		if back != last {
			t.Errorf("%s: the last key went back into a query as %s, want %s", tc.typ, back, last)
		}
	}
}

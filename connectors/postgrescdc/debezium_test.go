package postgrescdc

import (
	"encoding/json"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"
)

// debeziumUpdate is an update event as Debezium's PostgreSQL connector
// (2.x, JSON converter, schemas.enable=false, decimal.handling.mode=string)
// writes it for a table with REPLICA IDENTITY FULL: written by hand after
// the example in Debezium's documentation ("update event value"), with
// this test's values.
const debeziumUpdate = `{
  "before": {"id": 1, "name": "Anne", "price": "12.50", "created": "2024-03-01T10:00:00Z", "born": 19000},
  "after":  {"id": 1, "name": "Anne Marie", "price": "12.50", "created": "2024-03-01T10:00:00Z", "born": 19000},
  "source": {
    "version": "weir",
    "connector": "postgresql",
    "name": "PostgreSQL_server",
    "ts_ms": 1559033904863,
    "snapshot": "false",
    "db": "postgres",
    "sequence": null,
    "schema": "public",
    "table": "customers",
    "txId": 556,
    "lsn": 24023128,
    "xmin": null
  },
  "op": "u",
  "ts_ms": 1465584025523,
  "transaction": {"id": "556:24023128"}
}`

func TestDebeziumEnvelope(t *testing.T) {
	cols := []Column{
		{Name: "id", TypeOID: 23, Key: true},
		{Name: "name", TypeOID: 25},
		{Name: "price", TypeOID: 1700},
		{Name: "created", TypeOID: oidTimestamptz},
		{Name: "born", TypeOID: oidDate},
	}
	created := time.Date(2024, 3, 1, 11, 0, 0, 0, time.FixedZone("CET", 3600))
	born := time.Date(2022, 1, 8, 0, 0, 0, 0, time.UTC) // day 19000
	price := pgtype.Numeric{Int: big.NewInt(1250), Exp: -2, Valid: true}
	c := Change{
		Op: OpUpdate, Schema: "public", Table: "customers", Columns: cols,
		Before:     Row{"id": int32(1), "name": "Anne", "price": price, "created": created, "born": born},
		After:      Row{"id": int32(1), "name": "Anne Marie", "price": price, "created": created, "born": born},
		LSN:        pglogrepl.LSN(24023128),
		Xid:        556,
		CommitTime: time.UnixMilli(1559033904863),
	}
	got, err := MarshalDebezium(c, DebeziumSource{Name: "PostgreSQL_server", Database: "postgres"}, time.UnixMilli(1465584025523))
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(debeziumUpdate), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("envelope differs from Debezium's:\n got %s\nwant %s", got, debeziumUpdate)
	}
}

func TestDebeziumSnapshotAndDelete(t *testing.T) {
	cols := []Column{{Name: "id", TypeOID: 20, Key: true}, {Name: "doc", TypeOID: 25}}
	read, err := MarshalDebezium(Change{Op: OpRead, Schema: "public", Table: "t", Columns: cols, After: Row{"id": int64(7), "doc": nil}}, DebeziumSource{Name: "n", Database: "d"}, time.UnixMilli(5))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(read, &m)
	if m["op"] != "r" || m["before"] != nil || m["source"].(map[string]any)["snapshot"] != "true" || m["source"].(map[string]any)["lsn"] != nil {
		t.Errorf("snapshot read: %s", read)
	}
	del, err := MarshalDebezium(Change{Op: OpDelete, Schema: "public", Table: "t", Columns: cols, Before: Row{"id": int64(7)}, LSN: 9, Xid: 3}, DebeziumSource{Name: "n", Database: "d"}, time.UnixMilli(5))
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	json.Unmarshal(del, &m)
	if m["op"] != "d" || m["after"] != nil || m["before"].(map[string]any)["id"] != float64(7) {
		t.Errorf("delete: %s", del)
	}
}

func TestNumericString(t *testing.T) {
	for _, tc := range []struct {
		n    pgtype.Numeric
		want string
	}{
		{pgtype.Numeric{Int: big.NewInt(1250), Exp: -2, Valid: true}, "12.50"},
		{pgtype.Numeric{Int: big.NewInt(-5), Exp: -3, Valid: true}, "-0.005"},
		{pgtype.Numeric{Int: big.NewInt(12), Exp: 2, Valid: true}, "1200"},
	} {
		if got := numericString(tc.n); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.n, got, tc.want)
		}
	}
}

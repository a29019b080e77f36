package postgrescdc

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// DebeziumSource names the origin of changes in Debezium envelopes:
// Debezium's topic.prefix (source.name) and the database (source.db).
type DebeziumSource struct {
	Name     string
	Database string
}

// debeziumEnvelope is Debezium's change event value as its JSON
// converter writes it with schemas.enable=false.
type debeziumEnvelope struct {
	Before map[string]any  `json:"before"`
	After  map[string]any  `json:"after"`
	Source debeziumOrigin  `json:"source"`
	Op     string          `json:"op"`
	TsMs   int64           `json:"ts_ms"`
	Txn    *debeziumTxnRef `json:"transaction"`
}

type debeziumOrigin struct {
	Version   string  `json:"version"`
	Connector string  `json:"connector"`
	Name      string  `json:"name"`
	TsMs      int64   `json:"ts_ms"`
	Snapshot  string  `json:"snapshot"`
	DB        string  `json:"db"`
	Sequence  *string `json:"sequence"`
	Schema    string  `json:"schema"`
	Table     string  `json:"table"`
	TxID      *int64  `json:"txId"`
	LSN       *int64  `json:"lsn"`
	Xmin      *int64  `json:"xmin"`
}

type debeziumTxnRef struct {
	ID string `json:"id"`
}

// MarshalDebezium encodes a change as a Debezium PostgreSQL connector
// change event (the value, JSON converter, schemas.enable=false), so
// consumers written for Debezium read weir's changelog: before, after,
// source {connector "postgresql", name, db, schema, table, ts_ms (commit
// time), snapshot, txId, lsn}, op (r, c, u, d), ts_ms (now). Values are
// encoded as Debezium does by default where JSON has the type (integers,
// floats, booleans, text, json), timestamps as in Debezium's
// time.precision.mode=connect-less default (timestamp: microseconds
// since the epoch; timestamptz: ISO-8601 string; date: days since the
// epoch), and numeric as a string (decimal.handling.mode=string).
func MarshalDebezium(c Change, src DebeziumSource, now time.Time) ([]byte, error) {
	env := debeziumEnvelope{
		Op:   string(rune(c.Op)),
		TsMs: now.UnixMilli(),
		Source: debeziumOrigin{
			Version:   "weir",
			Connector: "postgresql",
			Name:      src.Name,
			TsMs:      c.CommitTime.UnixMilli(),
			Snapshot:  "false",
			DB:        src.Database,
			Schema:    c.Schema,
			Table:     c.Table,
		},
	}
	if c.Op == OpRead {
		env.Source.Snapshot = "true"
	} else {
		xid, lsn := int64(c.Xid), int64(c.LSN)
		env.Source.TxID, env.Source.LSN = &xid, &lsn
		env.Txn = &debeziumTxnRef{ID: strconv.FormatInt(xid, 10) + ":" + strconv.FormatInt(lsn, 10)}
	}
	var err error
	if env.Before, err = debeziumRow(c.Columns, c.Before); err != nil {
		return nil, fmt.Errorf("debezium envelope of %s.%s: before: %w", c.Schema, c.Table, err)
	}
	if env.After, err = debeziumRow(c.Columns, c.After); err != nil {
		return nil, fmt.Errorf("debezium envelope of %s.%s: after: %w", c.Schema, c.Table, err)
	}
	return json.Marshal(env)
}

func debeziumRow(cols []Column, row Row) (map[string]any, error) {
	if row == nil {
		return nil, nil
	}
	out := make(map[string]any, len(row))
	for _, col := range cols {
		v, ok := row[col.Name]
		if !ok {
			// Debezium's placeholder for an unchanged TOASTed value.
			out[col.Name] = "__debezium_unavailable_value"
			continue
		}
		dv, err := debeziumValue(col, v)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", col.Name, err)
		}
		out[col.Name] = dv
	}
	return out, nil
}

// The type oids whose Debezium encoding differs from the Go value's JSON.
const (
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidJSON        = 114
	oidJSONB       = 3802
)

func debeziumValue(col Column, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		switch col.TypeOID {
		case oidDate:
			return x.Unix() / 86400, nil
		case oidTimestamp:
			return x.UnixMicro(), nil
		default:
			return x.UTC().Format("2006-01-02T15:04:05.999999Z"), nil
		}
	case pgtype.Numeric:
		if !x.Valid {
			return nil, nil
		}
		if x.NaN {
			return "NaN", nil
		}
		return numericString(x), nil
	case []byte:
		return x, nil // base64, Debezium's bytes
	case map[string]any, []any:
		if col.TypeOID == oidJSON || col.TypeOID == oidJSONB {
			b, err := json.Marshal(x)
			return string(b), err // io.debezium.data.Json: a string
		}
		return x, nil
	}
	return v, nil
}

// numericString prints a numeric exactly.
func numericString(n pgtype.Numeric) string {
	if n.Exp >= 0 {
		i := new(big.Int).Mul(n.Int, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Exp)), nil))
		return i.String()
	}
	s := new(big.Int).Abs(n.Int).String()
	d := int(-n.Exp)
	for len(s) <= d {
		s = "0" + s
	}
	out := s[:len(s)-d] + "." + s[len(s)-d:]
	if n.Int.Sign() < 0 {
		out = "-" + out
	}
	return out
}

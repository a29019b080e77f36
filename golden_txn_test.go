package weir_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/kafka"
	"github.com/weirstream/weir/connectors/postgres"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/twophase"
)

// Golden transaction handles (docs/formats.md): the two-phase-commit
// state of each exactly-once sink, as a checkpoint holds it (operator list
// state "two-phase-commit": twophase.EncodeState of handles encoded by
// codec.For[TXN], as the sink operator does), committed under
// testdata/golden-txn and decoded by every build into the handles it was
// written from. A savepoint taken with pending transactions must keep
// committing them after an upgrade of weir. Decoding needs no broker or
// database. Write a missing golden with -update-golden=txn.

type handleCodec[TXN any] struct{ c codec.Codec[TXN] }

func (h handleCodec[TXN]) Encode(t TXN) ([]byte, error) { return h.c.Append(nil, t), nil }
func (h handleCodec[TXN]) Decode(b []byte) (TXN, error) {
	v, n, err := h.c.Decode(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%d trailing bytes", len(b)-n)
	}
	return v, err
}

func goldenTxn[TXN any](t *testing.T, name string, want twophase.State[TXN]) {
	t.Helper()
	c, err := codec.For[TXN]()
	if err != nil {
		t.Fatal(err)
	}
	hc := handleCodec[TXN]{c}
	path := filepath.Join("testdata", "golden-txn", name+".bin")
	if *updateGolden == "txn" {
		if _, err := os.Stat(path); err == nil {
			t.Logf("%s exists: not overwritten", path)
		} else {
			b, err := twophase.EncodeState(want, hc)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-golden=txn)", err)
	}
	got, err := twophase.DecodeState(b, hc)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s decodes to %+v, want %+v", path, got, want)
	}
}

func TestGoldenTransactionHandles(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		goldenTxn(t, "file-v1", twophase.State[file.Txn]{
			Pending:    []twophase.Pending[file.Txn]{{ID: 7, Txn: file.Txn{Name: "part-out-0-6", Seq: 6}}, {ID: 8, Txn: file.Txn{Name: "part-out-0-7", Seq: 7}}},
			Current:    file.Txn{Name: "part-out-0-8", Seq: 8},
			HasCurrent: true,
		})
	})
	t.Run("kafka", func(t *testing.T) {
		goldenTxn(t, "kafka-v1", twophase.State[*kafka.Txn]{
			Pending: []twophase.Pending[*kafka.Txn]{{ID: 41, Txn: &kafka.Txn{TransactionalID: "weir-totals-1-0", Subtask: 1, Parallelism: 4,
				ProducerID: 9001, Epoch: 3, Records: 1200, Bytes: 64000}}},
			Current:    &kafka.Txn{TransactionalID: "weir-totals-1-1", Subtask: 1, Parallelism: 4, Slot: 1, ProducerID: 9002, Epoch: 1, Empty: true},
			HasCurrent: true,
		})
	})
	t.Run("postgres", func(t *testing.T) {
		goldenTxn(t, "postgres-v1", twophase.State[postgres.Txn]{
			Pending: []twophase.Pending[postgres.Txn]{{ID: 12, Txn: postgres.Txn{GID: "weir:totals:2:12", Seq: 12}}},
			Current: postgres.Txn{GID: "weir:totals:2:13", Seq: 13}, HasCurrent: true,
		})
	})
}

package postgrescdc

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the source's gauges, labelled with the slot. A nil
// *metrics (no WithMetrics) records nothing.
type metrics struct {
	lagBytes, lagSec, retainedBytes prometheus.Gauge
	chunks, snapshotRows            prometheus.Counter
}

// newMetrics registers the gauges on reg, or takes the ones an earlier
// attempt of the source registered (a restart opens a new instance).
func newMetrics(reg prometheus.Registerer, slot string) *metrics {
	if reg == nil {
		return nil
	}
	labels := prometheus.Labels{"slot": slot}
	m := &metrics{
		lagBytes: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_postgrescdc_replication_lag_bytes", ConstLabels: labels,
			Help: "Bytes of WAL between the server's end of WAL and the position the source has emitted everything before (the log part; 0 while caught up)."})),
		lagSec: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_postgrescdc_replication_lag_seconds", ConstLabels: labels,
			Help: "Seconds from the commit of the transaction the source reads now to its reading; 0 while caught up."})),
		retainedBytes: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_postgrescdc_retained_wal_bytes", ConstLabels: labels,
			Help: "Bytes of WAL the server keeps for the slot (current WAL position minus the slot's restart_lsn), read after every completed checkpoint."})),
		chunks: register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_postgrescdc_snapshot_chunks_total", ConstLabels: labels,
			Help: "Snapshot chunks read (re-reads after a restore included)."})),
		snapshotRows: register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_postgrescdc_snapshot_rows_total", ConstLabels: labels,
			Help: "Snapshot rows read (re-reads after a restore included)."})),
	}
	return m
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
	}
	return c
}

func (m *metrics) chunk(rows int) {
	if m == nil {
		return
	}
	m.chunks.Inc()
	m.snapshotRows.Add(float64(rows))
}

func (m *metrics) walEnd(serverEnd, done uint64) {
	if m == nil {
		return
	}
	if serverEnd > done {
		m.lagBytes.Set(float64(serverEnd - done))
	} else {
		m.lagBytes.Set(0)
	}
}

func (m *metrics) lagSeconds(sec float64) {
	if m == nil {
		return
	}
	m.lagSec.Set(max(sec, 0))
}

// retained reads the WAL the slot holds back. A failure only leaves the
// gauge as it was: metrics never fail the job.
func (m *metrics) retained(ctx context.Context, conn *pgx.Conn, slot string) {
	if m == nil || conn == nil {
		return
	}
	var b *float64
	err := conn.QueryRow(ctx, "SELECT (pg_current_wal_lsn() - restart_lsn)::float8 FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&b)
	if err == nil && b != nil {
		m.retainedBytes.Set(*b)
	}
}

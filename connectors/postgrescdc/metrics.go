package postgrescdc

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
)

// metrics are the source's gauges, labelled with the slot: published
// through the operator (rc.SetGauge, exported on the JobManager's
// /metrics in local and cluster runs) and, with WithMetrics, on a
// registry of the user's. The snapshot counters go to the registry only.
type metrics struct {
	rc                              *weir.RuntimeContext
	slot                            string
	lagBytes, lagSec, retainedBytes prometheus.Gauge
	chunks, snapshotRows            prometheus.Counter
}

// The gauges' names, on the registry and on the JobManager's /metrics.
const (
	nameLagBytes      = "weir_postgrescdc_replication_lag_bytes"
	nameLagSeconds    = "weir_postgrescdc_replication_lag_seconds"
	nameRetainedBytes = "weir_postgrescdc_retained_wal_bytes"
)

// newMetrics publishes the gauges through rc and registers them on reg
// (nil: none), or takes the ones an earlier attempt of the source
// registered there (a restart opens a new instance).
func newMetrics(reg prometheus.Registerer, rc *weir.RuntimeContext, slot string) *metrics {
	m := &metrics{rc: rc, slot: slot}
	if reg == nil {
		// Kept but not exported: the setters need no nil checks.
		reg = prometheus.NewRegistry()
	}
	labels := prometheus.Labels{"slot": slot}
	m.lagBytes = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: nameLagBytes, ConstLabels: labels,
		Help: "Bytes of WAL between the server's end of WAL and the position the source has emitted everything before (the log part; 0 while caught up)."}))
	m.lagSec = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: nameLagSeconds, ConstLabels: labels,
		Help: "Seconds from the commit of the transaction the source reads now to its reading; 0 while caught up."}))
	m.retainedBytes = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: nameRetainedBytes, ConstLabels: labels,
		Help: "Bytes of WAL the server keeps for the slot (current WAL position minus the slot's restart_lsn), read after every completed checkpoint."}))
	m.chunks = register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_postgrescdc_snapshot_chunks_total", ConstLabels: labels,
		Help: "Snapshot chunks read (re-reads after a restore included)."}))
	m.snapshotRows = register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_postgrescdc_snapshot_rows_total", ConstLabels: labels,
		Help: "Snapshot rows read (re-reads after a restore included)."}))
	return m
}

// set sets gauge g, named name, and publishes it through the operator.
func (m *metrics) set(g prometheus.Gauge, name string, v float64) {
	g.Set(v)
	m.rc.SetGauge(name, v, "slot", m.slot)
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
		m.set(m.lagBytes, nameLagBytes, float64(serverEnd-done))
	} else {
		m.set(m.lagBytes, nameLagBytes, 0)
	}
}

func (m *metrics) lagSeconds(sec float64) {
	if m == nil {
		return
	}
	m.set(m.lagSec, nameLagSeconds, max(sec, 0))
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
		m.set(m.retainedBytes, nameRetainedBytes, *b)
	}
}

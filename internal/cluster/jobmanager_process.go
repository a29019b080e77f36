package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
)

// shutdownGrace bounds how long a stopping JobManager waits for its jobs'
// tasks to report cancelled before it drops the TaskManager sessions.
const shutdownGrace = 10 * time.Second

func runJobManager(ctx context.Context, cfg JobManagerConfig) error {
	if cfg.Resolve == nil {
		return errors.New("jobmanager: no job resolver: build the process with app.Main")
	}
	cfg.Resolve = guardResolve(cfg.Resolve)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StateDir == "" {
		return errors.New("jobmanager: --state-dir is empty: name a folder for job records and checkpoints")
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("jobmanager: --state-dir %s: %w", cfg.StateDir, err)
	}
	cfg.StateDir = dir
	if r := cfg.Reactive; r != nil {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("jobmanager: %w", err)
		}
		cfg.Logger.Info("reactive mode: the job runs on every slot (scheduler-mode: reactive)",
			"resource-stabilization-timeout", r.Stabilization, "resource-wait-timeout", r.WaitTimeout, "min-parallelism-increase", r.MinIncrease)
	}
	if err := os.MkdirAll(filepath.Join(dir, "jobs"), 0o755); err != nil {
		return fmt.Errorf("jobmanager: --state-dir %s cannot be created (%w): choose a writable folder", dir, err)
	}
	ln, err := Listen(cfg.RPCAddress)
	if err != nil {
		return fmt.Errorf("--rpc-address: %w", err)
	}
	// Both ports are bound before anything is served or logged, so a
	// port in use fails alone, naming its flag.
	rest, err := startJobManagerREST(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer rest.stop()
	if cfg.HA != nil {
		return runHAJobManager(ctx, cfg, ln, rest)
	}
	return serveTerm(ctx, cfg, term{ln: ln, rest: rest, store: jobStore{dir: dir}, ready: true})
}

// term is what one leadership of a JobManager serves with: without high
// availability there is one, for the life of the process.
type term struct {
	// ln is the rpc listener the term's Dispatcher serves (closed when it
	// stops: a view of the port under high availability).
	ln    net.Listener
	rest  *jmREST
	store jobRecords
	// lead is the leadership (nil without high availability), status
	// what REST shows of it.
	lead   Leadership
	status *leaderState
	// ready: call cfg.Ready once the term serves (the first and only
	// term without high availability; under it, Ready is called once the
	// ports are bound, before the first campaign).
	ready bool
}

// serveTerm runs the JobManager's active part until ctx ends: the
// Dispatcher for TaskManagers and clients, one JobMaster per job (the
// unfinished ones recovered from the store first), REST. When ctx ends
// the jobs stop but stay recorded as running, so the next leader (or the
// JobManager started again) recovers them.
func serveTerm(ctx context.Context, cfg JobManagerConfig, t term) error {
	jobsCtx, stopJobs := context.WithCancel(context.Background())
	defer stopJobs()
	m := newJobManager(jobsCtx, cfg)
	m.store = t.store
	m.lead = t.lead
	var fencing uint64
	if t.lead != nil {
		fencing = uint64(t.lead.Term())
		t.rest.lead(m, t.status.rest)
	} else {
		t.rest.lead(m, nil)
	}
	d, err := ServeDispatcher(t.ln, DispatcherConfig{
		BuildID:                 cfg.BuildID,
		HeartbeatInterval:       cfg.HeartbeatInterval,
		HeartbeatTimeout:        cfg.HeartbeatTimeout,
		Logger:                  cfg.Logger,
		Jobs:                    m,
		FencingToken:            fencing,
		TLS:                     cfg.TLS,
		OnTaskManagerRegistered: m.onRegistered,
		OnTaskManagerMessage:    m.onMessage,
		OnWeakReports:           m.onWeakReports,
		OnTaskManagerLost:       m.onLost,
	})
	if err != nil {
		return err
	}
	m.setDispatcher(d)
	m.recover()
	close(m.ready)
	if t.ready && cfg.Ready != nil {
		cfg.Ready(d.Addr(), t.rest.addr())
	}
	if t.lead == nil {
		cfg.Logger.Info("JobManager running", "rpc", d.Addr(), "rest", t.rest.addr(), "state_dir", cfg.StateDir)
	}
	<-ctx.Done()
	cfg.Logger.Info("JobManager stopping its jobs")
	stopJobs()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		cfg.Logger.Warn("jobs did not stop in time; dropping the TaskManager sessions")
	}
	d.Stop() // losing every session ends whatever job still waits
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		// A job still waits (a checkpoint write hanging on storage?): its
		// record stays RUNNING, so the next JobManager recovers it.
		cfg.Logger.Error("jobs still running after their TaskManagers were dropped; going on without them")
	}
	return nil
}

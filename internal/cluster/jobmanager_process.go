package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	if err := os.MkdirAll(filepath.Join(dir, "jobs"), 0o755); err != nil {
		return fmt.Errorf("jobmanager: --state-dir %s cannot be created (%w): choose a writable folder", dir, err)
	}
	ln, err := Listen(cfg.RPCAddress)
	if err != nil {
		return fmt.Errorf("--rpc-address: %w", err)
	}
	jobsCtx, stopJobs := context.WithCancel(context.Background())
	defer stopJobs()
	m := newJobManager(jobsCtx, cfg)
	// Both ports are bound before anything is served or logged, so a
	// port in use fails alone, naming its flag.
	rest, err := startJobManagerREST(cfg, m)
	if err != nil {
		ln.Close()
		return err
	}
	d, err := ServeDispatcher(ln, DispatcherConfig{
		BuildID:                 cfg.BuildID,
		HeartbeatInterval:       cfg.HeartbeatInterval,
		HeartbeatTimeout:        cfg.HeartbeatTimeout,
		Logger:                  cfg.Logger,
		Jobs:                    m,
		OnTaskManagerRegistered: m.onRegistered,
		OnTaskManagerMessage:    m.onMessage,
		OnTaskManagerLost:       m.onLost,
	})
	if err != nil {
		rest.stop()
		return err
	}
	m.setDispatcher(d)
	m.recover()
	close(m.ready)
	if cfg.Ready != nil {
		cfg.Ready(d.Addr(), rest.addr())
	}
	cfg.Logger.Info("JobManager running", "rpc", d.Addr(), "rest", rest.addr(), "state_dir", dir)
	<-ctx.Done()
	cfg.Logger.Info("JobManager stopping")
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
		cfg.Logger.Error("jobs still running after their TaskManagers were dropped; exiting without them")
	}
	rest.stop()
	return nil
}

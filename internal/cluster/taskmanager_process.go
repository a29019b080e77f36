package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network/remote"
	"github.com/weirstream/weir/internal/runtime"
)

func runTaskManagerProcess(ctx context.Context, cfg TaskManagerProcessConfig) error {
	if cfg.Resolve == nil {
		return errors.New("taskmanager: no job resolver: build the process with app.Main")
	}
	cfg.Resolve = guardResolve(cfg.Resolve)
	if cfg.Slots < 1 {
		return fmt.Errorf("taskmanager: --slots %d: a TaskManager needs at least one slot", cfg.Slots)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ResourceID == "" {
		var b [3]byte
		rand.Read(b[:])
		cfg.ResourceID = "tm-" + hex.EncodeToString(b[:])
	}
	log := cfg.Logger.With("tm", cfg.ResourceID)
	addr := cfg.DataAddress
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("--data-address %s is in use (another TaskManager?): choose another port, or leave it empty for a free one", addr)
	}
	if err != nil {
		return fmt.Errorf("--data-address %s: %w", addr, err)
	}
	mgr, err := remote.NewConnManager(remote.Config{ResourceID: cfg.ResourceID, BuildID: cfg.BuildID, TLS: cfg.TLS, PeerTimeout: cfg.PeerTimeout, Logger: log}, ln, nil)
	if err != nil {
		ln.Close()
		return err
	}
	defer mgr.Close()
	dataAddr := ln.Addr().String()
	resolve := func(spec deployment.JobSpec, description string) (*runtime.PreparedJob, error) {
		g, jc, err := cfg.Resolve(ctx, spec)
		if err != nil {
			return nil, runtime.Unrecoverable(fmt.Errorf("build job %s (%s) here: %w", spec.Name, spec.Kind, err))
		}
		jc.Logger = log.With("job", spec.Name)
		if cfg.Faults != nil {
			jc.Faults = cfg.Faults
		}
		return runtime.PrepareJob(spec, description, g, jc)
	}
	// A task stuck after its cancellation ends the process with the
	// error: its slots must not be offered again while it runs.
	stuck := make(chan struct{})
	var stuckErr error
	var stuckOnce sync.Once
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	onStuck := func(err error) {
		stuckOnce.Do(func() {
			stuckErr = err
			close(stuck)
			stop()
		})
	}
	h := &executorHandler{log: log, stuck: stuck}
	h.newExecutor = func(jm deployment.JobMasterGateway) *runtime.TaskExecutor {
		return runtime.NewTaskExecutor(runtime.TaskExecutorConfig{
			ID:                  deployment.ResourceID(cfg.ResourceID),
			DataAddress:         dataAddr,
			CancellationTimeout: cfg.CancellationTimeout,
			OnStuck:             onStuck,
			JobMaster:           jm,
			Resolve:             resolve,
			Network:             mgr,
			Logger:              log,
		})
	}
	defer h.Close()
	msrv, err := startTaskManagerMetrics(cfg.MetricsAddress, h, mgr.Traffic, log)
	if err != nil {
		return err
	}
	defer msrv.stop()
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr(), msrv.addr())
	}
	log.Info("TaskManager running", "jobmanager", cfg.JobManager, "slots", cfg.Slots, "data", dataAddr, "metrics", msrv.addr())
	err = RunTaskManager(ctx, TaskManagerConfig{
		JobManager:          cfg.JobManager,
		Locate:              cfg.Locate,
		LeaderTerms:         cfg.LeaderTerms,
		ResourceID:          cfg.ResourceID,
		Slots:               cfg.Slots,
		DataAddress:         dataAddr,
		MetricsAddress:      addrString(msrv.addr()),
		BuildID:             cfg.BuildID,
		RegistrationTimeout: cfg.RegistrationTimeout,
		TLS:                 cfg.TLS,
		Handler:             h,
		Logger:              log,
	})
	select {
	case <-stuck:
		return stuckErr
	default:
		return err
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

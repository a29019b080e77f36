package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/ha"
)

// jobManagerHA connects a JobManager to etcd when the configuration asks
// for high availability (high-availability.type: etcd); nil, nil without.
// The connection is checked at start: bad endpoints or credentials fail
// here, naming the endpoint and the key.
func jobManagerHA(ctx context.Context, conf *config.Config, log *slog.Logger) (cluster.HA, func(), error) {
	c, hc, err := dialHA(ctx, conf, log, true)
	if c == nil || err != nil {
		return nil, nil, err
	}
	return haServices{c: c, storage: hc.StorageDir}, func() { _ = c.Close() }, nil
}

// haServices adapts the etcd client to the JobManager's HA interface.
type haServices struct {
	c       *ha.Client
	storage string
}

func (s haServices) Campaign(ctx context.Context, self cluster.LeaderInfo) (cluster.Leadership, error) {
	l, err := s.c.Campaign(ctx, ha.LeaderInfo{ID: self.ID, RPCAddress: self.RPCAddress, RESTAddress: self.RESTAddress})
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s haServices) Observe(ctx context.Context) <-chan cluster.LeaderInfo {
	in := s.c.Observe(ctx)
	out := make(chan cluster.LeaderInfo)
	go func() {
		defer close(out)
		for l := range in {
			select {
			case out <- cluster.LeaderInfo{ID: l.ID, RPCAddress: l.RPCAddress, RESTAddress: l.RESTAddress, Term: l.Term}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (s haServices) Jobs(ctx context.Context) (map[string][]byte, error) { return s.c.Jobs(ctx) }

func (s haServices) Checkpoints(ctx context.Context, job string) ([]int64, error) {
	cps, err := s.c.Checkpoints(ctx, job)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(cps))
	for i, c := range cps {
		ids[i] = c.ID
	}
	return ids, nil
}

func (s haServices) CheckpointIDBound(ctx context.Context, job string) (int64, error) {
	return s.c.CheckpointIDBound(ctx, job)
}

func (s haServices) StorageDir() string { return s.storage }

// crashEnv names the test hook that kills a JobManager at a JobMaster
// crash point: WEIR_TEST_JM_CRASH=after-register:3 sends the process
// SIGKILL at the third hit of after-register (runtime's CrashPoint names).
// It exists for the high-availability tests' fault classes 3 and 4 (a
// crash between writing a checkpoint's metadata and registering it, and
// part-way through its notifications); nothing else sets it.
const crashEnv = "WEIR_TEST_JM_CRASH"

// tmCrashEnv names the test hook that kills a TaskManager at a task's
// fault point: WEIR_TEST_TM_CRASH=snapshot-async:3 sends the process
// SIGKILL at the third asynchronous snapshot any of its tasks takes, that
// is between a checkpoint's barrier and its acknowledgement (fault class
// 1). Only tests set it.
const tmCrashEnv = "WEIR_TEST_TM_CRASH"

// taskManagerCrash returns the injector tmCrashEnv asks for, nil if unset.
func (p *Program) taskManagerCrash(log *slog.Logger) (*faults.Injector, error) {
	v := p.getenv(tmCrashEnv)
	if v == "" {
		return nil, nil
	}
	point, n, err := faults.ParseCrash(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tmCrashEnv, err)
	}
	return faults.NewCrash(point, n, func(faults.Fired) {
		log.Warn("crash point reached: killing the TaskManager", "point", point, "hit", n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	})
}

// crashPoint returns the hook crashEnv asks for, nil if unset.
func (p *Program) crashPoint(log *slog.Logger) (func(string), error) {
	v := p.getenv(crashEnv)
	if v == "" {
		return nil, nil
	}
	name, nth, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(nth)
	if !ok || err != nil || n < 1 || name == "" {
		return nil, fmt.Errorf("%s=%q: want POINT:N, e.g. after-register:2", crashEnv, v)
	}
	var hits atomic.Int64
	return func(point string) {
		if point != name || hits.Add(1) != int64(n) {
			return
		}
		log.Warn("crash point reached: killing the JobManager", "point", point, "hit", n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}, nil
}

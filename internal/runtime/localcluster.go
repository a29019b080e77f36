package runtime

import (
	"fmt"
	"net"
	"slices"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network/remote"
)

// startLocalExecutors starts local mode's TaskExecutors: with one (the
// default) a single executor "local" without a data plane, whose channels
// are all in process; with cfg.LocalTaskManagers = n > 1, executors
// "local-0" … "local-<n-1>", each with its own ConnManager listening on
// 127.0.0.1:0, so that records between them cross loopback TCP encoded
// with their edge's codec, exactly as between the TaskManagers of a
// cluster. stop closes the executors (waiting for their tasks), then
// their data planes.
func startLocalExecutors(cfg JobConfig, jm deployment.JobMasterGateway, resolve JobResolver) (tes []*TaskExecutor, stop func(), err error) {
	n := max(cfg.LocalTaskManagers, 1)
	if n == 1 {
		te := NewTaskExecutor(TaskExecutorConfig{ID: "local", JobMaster: jm, Resolve: resolve, Logger: cfg.Logger})
		return []*TaskExecutor{te}, te.Close, nil
	}
	var mgrs []*remote.ConnManager
	stop = func() {
		for _, te := range tes {
			te.Close()
		}
		for _, m := range mgrs {
			_ = m.Close()
		}
	}
	for i := range n {
		id := deployment.ResourceID(fmt.Sprintf("local-%d", i))
		ln, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			stop()
			return nil, nil, fmt.Errorf("local TaskManager %s: listen for its data plane on 127.0.0.1: %w (minicluster.number-of-taskmanagers %d needs a free loopback port each)", id, lerr, n)
		}
		m, merr := remote.NewConnManager(remote.Config{ResourceID: string(id), BuildID: "local", Logger: cfg.Logger}, ln, nil)
		if merr != nil {
			_ = ln.Close()
			stop()
			return nil, nil, fmt.Errorf("local TaskManager %s: %w", id, merr)
		}
		mgrs = append(mgrs, m)
		tes = append(tes, NewTaskExecutor(TaskExecutorConfig{
			ID: id, DataAddress: m.Addr().String(), Network: m,
			JobMaster: jm, Resolve: resolve, Logger: cfg.Logger.With("taskmanager", string(id)),
		}))
	}
	return tes, stop, nil
}

// reportAll merges the task reports of several executors, ordered by task.
func reportAll(tes []*TaskExecutor, job string) []jobstatus.TaskStats {
	if len(tes) == 1 {
		return tes[0].Report(job)
	}
	var out []jobstatus.TaskStats
	for _, te := range tes {
		out = append(out, te.Report(job)...)
	}
	slices.SortFunc(out, func(a, b jobstatus.TaskStats) int {
		if a.Vertex != b.Vertex {
			return a.Vertex - b.Vertex
		}
		return a.Subtask - b.Subtask
	})
	return out
}

// dataAddressOf returns tm's data address, or "" when it has none to give
// (a TaskManager whose channels are all in process).
func dataAddressOf(tm deployment.TaskManagerGateway) string {
	if a, ok := tm.(deployment.DataAddresser); ok {
		return a.DataAddress()
	}
	return ""
}

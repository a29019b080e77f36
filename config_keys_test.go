package weir

import (
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestConfigKeyConstants keeps the public key and value constants equal
// to the engine's, which the configuration registry validates, and the
// job state constants equal to the states the runtime reports.
func TestConfigKeyConstants(t *testing.T) {
	for _, c := range [][2]string{
		{ParallelismDefault, config.ParallelismDefault},
		{MaxParallelism, config.MaxParallelism},
		{CheckpointingInterval, config.CheckpointingInterval},
		{CheckpointingMode, config.CheckpointingMode},
		{CheckpointingTimeout, config.CheckpointingTimeout},
		{CheckpointingUnaligned, config.CheckpointingUnaligned},
		{CheckpointsDir, config.CheckpointsDir},
		{CheckpointsNumRetained, config.CheckpointsNumRetained},
		{StateBackendType, config.StateBackendType},
		{StateBackendIncremental, config.StateBackendIncremental},
		{RestartStrategyType, config.RestartStrategyType},
		{BatchSize, config.BatchSize},
		{ExactlyOnce, config.ModeExactlyOnce},
		{AtLeastOnce, config.ModeAtLeastOnce},
		{HeapStateBackend, config.BackendHeap},
		{LSMStateBackend, config.BackendLSM},
		{RestartNone, config.RestartNone},
		{RestartFixedDelay, config.RestartFixed},
		{RestartExponentialDelay, config.RestartExpDelay},
		{RestartFailureRate, config.RestartFailRate},
		{JobCreated, string(jobstatus.StateCreated)},
		{JobRunning, string(jobstatus.StateRunning)},
		{JobRestarting, string(jobstatus.StateRestarting)},
		{JobFinished, string(jobstatus.StateFinished)},
		{JobFailed, string(jobstatus.StateFailed)},
		{JobCanceled, string(jobstatus.StateCanceled)},
	} {
		if c[0] != c[1] {
			t.Errorf("public constant %q, engine %q", c[0], c[1])
		}
	}
}

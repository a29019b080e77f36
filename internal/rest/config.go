package rest

import (
	"net/http"
	"strings"

	"github.com/weirstream/weir/internal/config"
)

// CheckpointConfig is the body of GET /jobs/{jobid}/checkpoints/config:
// the job's execution.checkpointing.* and state.checkpoints.* settings,
// durations in milliseconds.
type CheckpointConfig struct {
	// Mode is exactly_once, at_least_once or weakly_consistent.
	Mode string `json:"mode"`
	// Interval is 0 when periodic checkpoints are off.
	Interval                   int64  `json:"interval"`
	Timeout                    int64  `json:"timeout"`
	MinPause                   int64  `json:"min_pause"`
	MaxConcurrent              int    `json:"max_concurrent"`
	TolerableFailedCheckpoints int    `json:"tolerable_failed_checkpoints"`
	UnalignedCheckpoints       bool   `json:"unaligned_checkpoints"`
	AlignedCheckpointTimeout   int64  `json:"aligned_checkpoint_timeout"`
	NumRetained                int    `json:"num_retained"`
	CheckpointStorage          string `json:"checkpoint_storage"`
	// WeakInFlightLogMaxRecords is
	// execution.checkpointing.weak.in-flight-log.max-records, in
	// weakly_consistent mode only.
	WeakInFlightLogMaxRecords int `json:"weak_in_flight_log_max_records,omitempty"`
}

func (a *api) checkpointConfig(w http.ResponseWriter, r *http.Request, j Job) {
	c := j.Config()
	writeJSON(w, http.StatusOK, CheckpointConfig{
		Mode:                       strings.ToLower(c.String(config.CheckpointingMode)),
		Interval:                   c.Duration(config.CheckpointingInterval).Milliseconds(),
		Timeout:                    c.Duration(config.CheckpointingTimeout).Milliseconds(),
		MinPause:                   c.Duration(config.CheckpointingMinPause).Milliseconds(),
		MaxConcurrent:              c.Int(config.CheckpointingMaxConcurrent),
		TolerableFailedCheckpoints: c.Int(config.CheckpointingTolerableFailures),
		UnalignedCheckpoints:       c.Bool(config.CheckpointingUnaligned),
		AlignedCheckpointTimeout:   c.Duration(config.CheckpointingAlignedTimeout).Milliseconds(),
		NumRetained:                c.Int(config.CheckpointsNumRetained),
		CheckpointStorage:          c.String(config.CheckpointsDir),
		WeakInFlightLogMaxRecords:  weakLogBound(c),
	})
}

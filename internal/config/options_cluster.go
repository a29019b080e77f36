package config

import (
	"fmt"
	"time"
)

// Cluster keys: the timing of the JobManager–TaskManager session and a
// TaskManager's slots (docs/cluster.md). The names are Flink's. They are
// read by the process roles (weir jobmanager, weir taskmanager), not by a
// job, so a job's own -D of them changes nothing.
const (
	HeartbeatInterval              = "heartbeat.interval"
	HeartbeatTimeout               = "heartbeat.timeout"
	TaskManagerRegistrationTimeout = "taskmanager.registration.timeout"
	SlotRequestTimeout             = "slot.request.timeout"
	TaskManagerNumberOfTaskSlots   = "taskmanager.numberOfTaskSlots"
	TaskCancellationTimeout        = "task.cancellation.timeout"
)

func clusterOptions() []Option {
	return []Option{
		{Key: HeartbeatInterval, Default: "10 s", Kind: KindDuration, Validate: durationPositive,
			Description: "How often the JobManager asks every TaskManager for a heartbeat (the TaskManager's answer carries its task reports)."},
		{Key: HeartbeatTimeout, Default: "50 s", Kind: KindDuration, Validate: durationPositive,
			Description: "Silence after which either side declares the other lost: the JobManager fails the TaskManager's tasks and redeploys them, the TaskManager cancels its tasks and registers again. It also bounds the silence of a data connection between two TaskManagers (unacknowledged data, unanswered keepalive probes): the connection is closed and the tasks whose channels cross it fail over. Must exceed heartbeat.interval."},
		{Key: TaskManagerRegistrationTimeout, Default: "5 min", Kind: KindDuration, Validate: durationPositive,
			Description: "How long a TaskManager keeps trying to register with an unreachable JobManager (backoff 100 ms to 5 s) before it exits with an error."},
		{Key: SlotRequestTimeout, Default: "5 min", Kind: KindDuration, Validate: durationPositive,
			Description: "How long a job waits for enough free slots before it fails (a restart cannot create slots)."},
		{Key: TaskCancellationTimeout, Default: "3 min", Kind: KindDuration, Validate: durationPositive,
			Description: "How long a cancelled task may take to stop before its TaskManager gives up on it and exits with an error naming the task (a task that ignores cancellation would otherwise hold its slots and keep the TaskManager from registering again). The JobManager redeploys what ran there."},
		{Key: TaskManagerNumberOfTaskSlots, Default: "1", Kind: KindInt, Validate: intAtLeast(1),
			Description: "Task slots a TaskManager offers (its --slots flag wins). Slot i runs subtask i of every operator, so a job needs as many slots as its largest parallelism."},
	}
}

// ClusterTiming is the cluster keys of a Config, read and checked together.
type ClusterTiming struct {
	HeartbeatInterval   time.Duration
	HeartbeatTimeout    time.Duration
	RegistrationTimeout time.Duration
	SlotRequestTimeout  time.Duration
	CancellationTimeout time.Duration
	Slots               int
}

// Cluster returns the cluster keys of c and checks what no single key's
// validator can: heartbeat.timeout must exceed heartbeat.interval, or
// every TaskManager would look lost between two heartbeats.
func (c *Config) Cluster() (ClusterTiming, error) {
	t := ClusterTiming{
		HeartbeatInterval:   c.Duration(HeartbeatInterval),
		HeartbeatTimeout:    c.Duration(HeartbeatTimeout),
		RegistrationTimeout: c.Duration(TaskManagerRegistrationTimeout),
		SlotRequestTimeout:  c.Duration(SlotRequestTimeout),
		CancellationTimeout: c.Duration(TaskCancellationTimeout),
		Slots:               c.Int(TaskManagerNumberOfTaskSlots),
	}
	if t.HeartbeatTimeout <= t.HeartbeatInterval {
		return t, fmt.Errorf("%w: %s %s must exceed %s %s, or every TaskManager looks lost between two heartbeats: raise %s (Flink uses 5 × the interval)",
			ErrBadValue, HeartbeatTimeout, FormatDuration(t.HeartbeatTimeout), HeartbeatInterval, FormatDuration(t.HeartbeatInterval), HeartbeatTimeout)
	}
	return t, nil
}

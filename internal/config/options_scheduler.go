package config

import (
	"fmt"
	"time"
)

// Scheduler keys (docs/rescaling.md, "Reactive mode"): Flink's names.
// Like the cluster keys they are read by weir jobmanager, not by a job.
const (
	SchedulerMode = "scheduler-mode"
	// AdaptiveResourceWaitTimeout is how long a reactive job waits for
	// slots it lost before it scales down to the slots that remain.
	AdaptiveResourceWaitTimeout = "jobmanager.adaptive-scheduler.resource-wait-timeout"
	// AdaptiveStabilizationTimeout is how long new slots must stay
	// without growing before a reactive job scales up to them.
	AdaptiveStabilizationTimeout = "jobmanager.adaptive-scheduler.resource-stabilization-timeout"
	// AdaptiveMinParallelismIncrease is the least growth worth a rescale.
	AdaptiveMinParallelismIncrease = "jobmanager.adaptive-scheduler.min-parallelism-increase"
)

// scheduler-mode values.
const (
	SchedulerDefault  = "default"
	SchedulerReactive = "reactive"
)

func schedulerOptions() []Option {
	return []Option{
		{Key: SchedulerMode, Default: SchedulerDefault, Kind: KindEnum,
			Enum:        []string{SchedulerDefault, SchedulerReactive},
			Description: `"reactive": the JobManager runs its job on every slot of the cluster: a TaskManager that registers makes it scale up in place, and one lost for longer than ` + AdaptiveResourceWaitTimeout + ` makes it scale down to the slots that remain and go on (docs/rescaling.md, "Reactive mode"). One job per cluster; not with WEAKLY_CONSISTENT. "default": a job runs at the parallelism it was submitted with.`},
		{Key: AdaptiveResourceWaitTimeout, Default: "30 s", Kind: KindDuration,
			Description: "Reactive mode: how long a job whose slots were lost (a TaskManager gone) waits for them to come back before it is started again at the parallelism of the slots that remain. Must be below slot.request.timeout."},
		{Key: AdaptiveStabilizationTimeout, Default: "10 s", Kind: KindDuration,
			Description: "Reactive mode: how long the slots must stay without growing before the job scales up to them, so that TaskManagers started together give one rescale."},
		{Key: AdaptiveMinParallelismIncrease, Default: "1", Kind: KindInt, Validate: intAtLeast(1),
			Description: "Reactive mode: the least growth of the parallelism worth a rescale."},
	}
}

// SchedulerSettings is the scheduler keys of a Config, read and checked
// together.
type SchedulerSettings struct {
	Reactive      bool
	WaitTimeout   time.Duration
	Stabilization time.Duration
	MinIncrease   int
}

// Scheduler returns the scheduler keys of c and checks what no single
// key's validator can: in reactive mode the wait for lost slots must end
// before slot.request.timeout fails the job that waits for them.
func (c *Config) Scheduler() (SchedulerSettings, error) {
	s := SchedulerSettings{
		Reactive:      c.String(SchedulerMode) == SchedulerReactive,
		WaitTimeout:   c.Duration(AdaptiveResourceWaitTimeout),
		Stabilization: c.Duration(AdaptiveStabilizationTimeout),
		MinIncrease:   c.Int(AdaptiveMinParallelismIncrease),
	}
	if slot := c.Duration(SlotRequestTimeout); s.Reactive && s.WaitTimeout >= slot {
		return s, fmt.Errorf("%w: %s %s must be below %s %s: a job waiting for lost slots would fail before it scales down; lower %s or raise %s",
			ErrBadValue, AdaptiveResourceWaitTimeout, FormatDuration(s.WaitTimeout), SlotRequestTimeout, FormatDuration(slot), AdaptiveResourceWaitTimeout, SlotRequestTimeout)
	}
	return s, nil
}

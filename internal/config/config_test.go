package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	want := [][2]string{
		{"execution.buffer-timeout.interval", "100 ms"},
		{"execution.checkpointing.aligned-checkpoint-timeout", "0 ms"},
		{"execution.checkpointing.interval", "0 ms"},
		{"execution.checkpointing.max-concurrent-checkpoints", "1"},
		{"execution.checkpointing.min-pause", "0 ms"},
		{"execution.checkpointing.mode", "EXACTLY_ONCE"},
		{"execution.checkpointing.storage-failure-max-backoff", "2 min"},
		{"execution.checkpointing.storage-failure-timeout", "30 min"},
		{"execution.checkpointing.timeout", "10 min"},
		{"execution.checkpointing.tolerable-failed-checkpoints", "0"},
		{"execution.checkpointing.unaligned.enabled", "false"},
		{"execution.checkpointing.unaligned.max-channel-state-bytes", "268435456"},
		{"execution.checkpointing.weak.in-flight-log.max-records", "1000000"},
		{"execution.checkpointing.weak.in-flight-log.snapshot", "true"},
		{"heartbeat.interval", "10 s"},
		{"heartbeat.timeout", "50 s"},
		{"high-availability.cluster-id", "/default"},
		{"high-availability.etcd.dial-timeout", "5 s"},
		{"high-availability.etcd.endpoints", ""},
		{"high-availability.etcd.lease-ttl", "10 s"},
		{"high-availability.etcd.password", ""},
		{"high-availability.etcd.tls.ca-file", ""},
		{"high-availability.etcd.tls.cert-file", ""},
		{"high-availability.etcd.tls.key-file", ""},
		{"high-availability.etcd.username", ""},
		{"high-availability.storageDir", ""},
		{"high-availability.type", "NONE"},
		{"job.autoscaler.backpressure.limit", "0.3"},
		{"job.autoscaler.catch-up.duration", "5 min"},
		{"job.autoscaler.enabled", "false"},
		{"job.autoscaler.interval", "10 s"},
		{"job.autoscaler.metrics.window", "3 min"},
		{"job.autoscaler.scale-down.interval", "10 min"},
		{"job.autoscaler.scale-down.max-factor", "0.6"},
		{"job.autoscaler.scale-up.max-factor", "0"},
		{"job.autoscaler.stabilization.interval", "1 min"},
		{"job.autoscaler.target.utilization", "0.7"},
		{"job.autoscaler.target.utilization.boundary", "0.3"},
		{"jobmanager.adaptive-scheduler.min-parallelism-increase", "1"},
		{"jobmanager.adaptive-scheduler.resource-stabilization-timeout", "10 s"},
		{"jobmanager.adaptive-scheduler.resource-wait-timeout", "30 s"},
		{"minicluster.number-of-taskmanagers", "1"},
		{"parallelism.default", "1"},
		{"pipeline.auto-watermark-interval", "200 ms"},
		{"pipeline.batch-size", "1024"},
		{"pipeline.max-parallelism", "128"},
		{"rest.savepoints.allow-any-target", "false"},
		{"restart-strategy.exponential-delay.attempts-before-reset-backoff", "2147483647"},
		{"restart-strategy.exponential-delay.backoff-multiplier", "1.5"},
		{"restart-strategy.exponential-delay.initial-backoff", "1 s"},
		{"restart-strategy.exponential-delay.jitter-factor", "0.1"},
		{"restart-strategy.exponential-delay.max-backoff", "1 min"},
		{"restart-strategy.exponential-delay.reset-backoff-threshold", "1 h"},
		{"restart-strategy.failure-rate.delay", "1 s"},
		{"restart-strategy.failure-rate.failure-rate-interval", "1 min"},
		{"restart-strategy.failure-rate.max-failures-per-interval", "1"},
		{"restart-strategy.fixed-delay.attempts", "1"},
		{"restart-strategy.fixed-delay.delay", "1 s"},
		{"restart-strategy.type", "exponential-delay"},
		{"s3.access-key", ""},
		{"s3.connection.ssl.enabled", "true"},
		{"s3.endpoint", ""},
		{"s3.path.style.access", "false"},
		{"s3.region", ""},
		{"s3.secret-key", ""},
		{"s3.session-token", ""},
		{"scheduler-mode", "default"},
		{"security.rest.token-file", ""},
		{"security.ssl.internal.ca-file", ""},
		{"security.ssl.internal.cert-file", ""},
		{"security.ssl.internal.enabled", "false"},
		{"security.ssl.internal.key-file", ""},
		{"security.ssl.rest.ca-file", ""},
		{"security.ssl.rest.cert-file", ""},
		{"security.ssl.rest.enabled", "false"},
		{"security.ssl.rest.key-file", ""},
		{"slot.request.timeout", "5 min"},
		{"state.backend.incremental", "false"},
		{"state.backend.local-recovery", "false"},
		{"state.backend.lsm.block-cache-size", "64 mb"},
		{"state.backend.lsm.dir", ""},
		{"state.backend.lsm.memtable-size", "16 mb"},
		{"state.backend.lsm.write-buffer-size", "128 mb"},
		{"state.backend.type", "heap"},
		{"state.checkpoints.dir", ""},
		{"state.checkpoints.num-retained", "3"},
		{"state.savepoints.dir", ""},
		{"task.cancellation.timeout", "3 min"},
		{"taskmanager.network.credits-per-channel", "4"},
		{"taskmanager.network.max-overdraft-buffers-per-channel", "2"},
		{"taskmanager.numberOfTaskSlots", "1"},
		{"taskmanager.registration.timeout", "5 min"},
	}
	c := New()
	got := c.Entries()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Entries() =\n%v\nwant\n%v", got, want)
	}
	for _, kv := range want {
		if c.IsSet(kv[0]) {
			t.Errorf("IsSet(%s) = true on a fresh Config", kv[0])
		}
	}
	if c.Duration(CheckpointingTimeout) != 10*time.Minute || c.Int(CheckpointsNumRetained) != 3 ||
		c.Bool(CheckpointingUnaligned) || c.Float(ExponentialDelayBackoffMultiplier) != 1.5 ||
		c.String(StateBackendType) != "heap" {
		t.Errorf("typed getters disagree with defaults")
	}
}

func TestOptionsIsFreshEachCall(t *testing.T) {
	a := Options()
	a[0].Default = "garbage"
	a[0].Enum = append(a[0].Enum, "x")
	if b := Options(); b[0].Default == "garbage" {
		t.Fatal("Options() shares state between calls")
	}
	if got := New().Entries(); fmt.Sprint(got) != fmt.Sprint(New().Entries()) || strings.Contains(fmt.Sprint(got), "garbage") {
		t.Fatal("New() saw a caller's change to Options()")
	}
}

func TestSetCanonicalizes(t *testing.T) {
	cases := []struct{ key, value, canonKey, want string }{
		{StateBackendType, "hashmap", StateBackendType, "heap"},
		{StateBackendType, "HEAP", StateBackendType, "heap"},
		{"state.backend", "hashmap", StateBackendType, "heap"},
		{StateBackendType, "rocksdb", StateBackendType, "lsm"},
		{StateBackendType, "LSM", StateBackendType, "lsm"},
		{RestartStrategyType, "fixeddelay", RestartStrategyType, "fixed-delay"},
		{RestartStrategyType, "off", RestartStrategyType, "none"},
		{RestartStrategyType, "disable", RestartStrategyType, "none"},
		{RestartStrategyType, "FailureRate", RestartStrategyType, "failure-rate"},
		{RestartStrategyType, "exponentialdelay", RestartStrategyType, "exponential-delay"},
		{"restart-strategy", "none", RestartStrategyType, "none"},
		{CheckpointingMode, "at_least_once", CheckpointingMode, "AT_LEAST_ONCE"},
		{CheckpointingMode, "exactly-once", CheckpointingMode, "EXACTLY_ONCE"},
		{CheckpointingInterval, "10s", CheckpointingInterval, "10 s"},
		{CheckpointingInterval, "60000", CheckpointingInterval, "1 min"},
		{CheckpointingUnaligned, "TRUE", CheckpointingUnaligned, "true"},
		{ExponentialDelayBackoffMultiplier, " 2.0 ", ExponentialDelayBackoffMultiplier, "2"},
		{"execution.checkpointing.num-retained", "5", CheckpointsNumRetained, "5"},
		{"execution.checkpointing.dir", "file:///tmp/chk", CheckpointsDir, "file:///tmp/chk"},
		{"execution.checkpointing.alignment-timeout", "30 s", CheckpointingAlignedTimeout, "30 s"},
	}
	for _, tc := range cases {
		c := New()
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Errorf("Set(%s, %q): %v", tc.key, tc.value, err)
			continue
		}
		var got string
		for _, kv := range c.Entries() {
			if kv[0] == tc.canonKey {
				got = kv[1]
			}
		}
		if got != tc.want || !c.IsSet(tc.canonKey) {
			t.Errorf("Set(%s, %q): entry %s = %q (set %v); want %q", tc.key, tc.value, tc.canonKey, got, c.IsSet(tc.canonKey), tc.want)
		}
	}
	c := New()
	if err := c.Set(CheckpointingInterval, "5 min"); err != nil || c.Duration(CheckpointingInterval) != 5*time.Minute {
		t.Errorf("interval = %v, %v", c.Duration(CheckpointingInterval), err)
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		key, value string
		want       string
		is         error
	}{
		{"restart-strategy.typ", "none", `unknown configuration key "restart-strategy.typ": did you mean "restart-strategy.type"?`, ErrUnknownKey},
		{"checkpointing.interval", "1s", `unknown configuration key "checkpointing.interval": did you mean "execution.checkpointing.interval"?`, ErrUnknownKey},
		{"state.backend.typo", "heap", `unknown configuration key "state.backend.typo": did you mean "state.backend.type"?`, ErrUnknownKey},
		{"restart-strategy.exponential-delay.max-backof", "1s", `unknown configuration key "restart-strategy.exponential-delay.max-backof": did you mean "restart-strategy.exponential-delay.max-backoff"?`, ErrUnknownKey},
		{"foo", "bar", `unknown configuration key "foo": no known key is close; check the spelling against the documented keys`, ErrUnknownKey},
		{ParallelismDefault, "four", `parallelism.default: bad configuration value "four": want an integer`, ErrBadValue},
		{ParallelismDefault, "0", `parallelism.default: bad configuration value "0": must be >= 1`, ErrBadValue},
		{CheckpointsNumRetained, "0", `state.checkpoints.num-retained: bad configuration value "0": must be >= 1`, ErrBadValue},
		{MaxParallelism, "40000", `pipeline.max-parallelism: bad configuration value "40000": must be between 1 and 32768`, ErrBadValue},
		{StateBackendType, "disk", `state.backend.type: bad configuration value "disk": want one of heap, lsm`, ErrBadValue},
		{RestartStrategyType, "sometimes", `restart-strategy.type: bad configuration value "sometimes": want one of none, fixed-delay, exponential-delay, failure-rate`, ErrBadValue},
		{CheckpointingInterval, "-1s", `execution.checkpointing.interval: bad configuration value "-1s": negative duration "-1s": durations must be >= 0`, ErrBadValue},
		{CheckpointingTimeout, "0", `execution.checkpointing.timeout: bad configuration value "0": must be > 0`, ErrBadValue},
		{CheckpointingUnaligned, "yes", `execution.checkpointing.unaligned.enabled: bad configuration value "yes": want "true" or "false"`, ErrBadValue},
		{ExponentialDelayJitterFactor, "1.5", `restart-strategy.exponential-delay.jitter-factor: bad configuration value "1.5": must be between 0 and 1`, ErrBadValue},
		{ExponentialDelayBackoffMultiplier, "0.5", `restart-strategy.exponential-delay.backoff-multiplier: bad configuration value "0.5": must be >= 1`, ErrBadValue},
		{ExponentialDelayBackoffMultiplier, "NaN", `restart-strategy.exponential-delay.backoff-multiplier: bad configuration value "NaN": want a finite number such as 1.5`, ErrBadValue},
	}
	for _, tc := range cases {
		c := New()
		before := fmt.Sprint(c.Entries())
		err := c.Set(tc.key, tc.value)
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("Set(%q, %q) = %v;\nwant %s", tc.key, tc.value, err, tc.want)
		}
		if fmt.Sprint(c.Entries()) != before {
			t.Errorf("failed Set(%q, %q) changed the config", tc.key, tc.value)
		}
	}
}

func TestSetOverrides(t *testing.T) {
	c := New()
	err := c.SetOverrides([]string{"parallelism.default=2", "-Dstate.backend.type=hashmap", "parallelism.default = 4", "state.checkpoints.dir=s3://b/p?x=y"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Int(ParallelismDefault) != 4 || c.String(StateBackendType) != "heap" || c.String(CheckpointsDir) != "s3://b/p?x=y" {
		t.Errorf("got parallelism %d backend %q dir %q", c.Int(ParallelismDefault), c.String(StateBackendType), c.String(CheckpointsDir))
	}

	bad := []struct {
		kvs  []string
		want string
	}{
		{[]string{"parallelism.default"}, `override "parallelism.default": want key=value, e.g. -D execution.checkpointing.interval=10s`},
		{[]string{"=3"}, `override "=3": want key=value, e.g. -D execution.checkpointing.interval=10s`},
		{[]string{"pipeline.batch-size=8", "parallelism.defualt=3"}, `override "parallelism.defualt=3": unknown configuration key "parallelism.defualt": did you mean "parallelism.default"?`},
	}
	for _, tc := range bad {
		c := New()
		err := c.SetOverrides(tc.kvs)
		if err == nil || err.Error() != tc.want {
			t.Errorf("SetOverrides(%q) = %v;\nwant %s", tc.kvs, err, tc.want)
		}
		if c.IsSet(BatchSize) {
			t.Errorf("SetOverrides(%q) applied part of a bad list", tc.kvs)
		}
	}
}

func TestGettersPanicOnProgrammingErrors(t *testing.T) {
	c := New()
	for name, f := range map[string]func(){
		"unknown key":      func() { c.Int("no.such.key") },
		"wrong kind":       func() { c.Duration(ParallelismDefault) },
		"string of int":    func() { c.String(ParallelismDefault) },
		"IsSet unknown":    func() { c.IsSet("no.such.key") },
		"Bool of duration": func() { c.Bool(CheckpointingInterval) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "config: ") {
					t.Errorf("%s: recovered %v; want a config panic", name, r)
				}
			}()
			f()
		}()
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"type", "typ", 1}, {"flaw", "lawn", 2}}
	for _, tc := range cases {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

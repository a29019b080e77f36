package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestClusterDefaults(t *testing.T) {
	got, err := New().Cluster()
	if err != nil {
		t.Fatal(err)
	}
	want := ClusterTiming{
		HeartbeatInterval:   10 * time.Second,
		HeartbeatTimeout:    50 * time.Second,
		RegistrationTimeout: 5 * time.Minute,
		SlotRequestTimeout:  5 * time.Minute,
		CancellationTimeout: 3 * time.Minute,
		Slots:               1,
	}
	if got != want {
		t.Fatalf("Cluster() = %+v, want %+v", got, want)
	}
}

func TestClusterKeysRefuseBadValues(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{HeartbeatInterval, "0", "must be > 0"},
		{HeartbeatTimeout, "-1s", "heartbeat.timeout"},
		{TaskManagerRegistrationTimeout, "soon", "taskmanager.registration.timeout"},
		{SlotRequestTimeout, "0 s", "must be > 0"},
		{TaskManagerNumberOfTaskSlots, "0", "must be >= 1"},
		{TaskManagerNumberOfTaskSlots, "two", "want an integer"},
	} {
		err := New().Set(tc.key, tc.value)
		if err == nil || !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Set(%s, %q) = %v, want ErrBadValue naming the key and %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestClusterTimeoutMustExceedInterval(t *testing.T) {
	c := New()
	if err := c.SetOverrides([]string{"heartbeat.interval=20s", "heartbeat.timeout=20s"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Cluster()
	if err == nil || !errors.Is(err, ErrBadValue) {
		t.Fatalf("Cluster() = %v, want ErrBadValue", err)
	}
	for _, w := range []string{"heartbeat.timeout 20 s", "heartbeat.interval 20 s", "raise heartbeat.timeout"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if err := c.Set(HeartbeatTimeout, "21s"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cluster(); err != nil {
		t.Fatalf("timeout 21s > interval 20s refused: %v", err)
	}
}

func TestExplicitIsACopyOfSetKeys(t *testing.T) {
	c := New()
	if got := c.Explicit(); len(got) != 0 {
		t.Fatalf("Explicit() of a fresh Config = %v, want empty", got)
	}
	if err := c.SetOverrides([]string{"execution.checkpointing.interval=1min", "state.backend=rocksdb"}); err != nil {
		t.Fatal(err)
	}
	got := c.Explicit()
	want := map[string]string{CheckpointingInterval: "1 min", StateBackendType: BackendLSM}
	if len(got) != len(want) || got[CheckpointingInterval] != want[CheckpointingInterval] || got[StateBackendType] != want[StateBackendType] {
		t.Fatalf("Explicit() = %v, want %v (canonical keys and values)", got, want)
	}
	got[ParallelismDefault] = "9"
	if c.IsSet(ParallelismDefault) {
		t.Fatal("a change to Explicit()'s map reached the Config")
	}
	d := New()
	for k, v := range got {
		if err := d.Set(k, v); err != nil {
			t.Fatalf("Explicit()'s %s=%q does not set again: %v", k, v, err)
		}
	}
}

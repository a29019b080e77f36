package ha

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/ha/etcdtest"
)

func TestJobStore(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c := connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	l := campaign(t, c, "jm-1")
	// "a/b" cannot reach outside the jobs prefix nor collide with "a".
	for _, name := range []string{"demo", "a", "a/b", "50%", ".."} {
		if err := l.SaveJob(ctx, name, []byte("rec-"+name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SaveJob(ctx, "", nil); err == nil {
		t.Fatal("SaveJob with an empty name succeeded")
	}
	if err := l.DeleteJob(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteJob(ctx, "never-saved"); err != nil {
		t.Fatalf("deleting an absent job: %v", err)
	}
	jobs, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"demo": []byte("rec-demo"), "a/b": []byte("rec-a/b"), "50%": []byte("rec-50%"), "..": []byte("rec-..")}
	if !reflect.DeepEqual(jobs, want) {
		t.Fatalf("Jobs = %q, want %q", jobs, want)
	}
}

func TestCheckpointStore(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c := connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	l := campaign(t, c, "jm-1")
	for _, id := range []int64{10, 2, 9, 1, 100} {
		if err := l.RegisterCheckpoint(ctx, "demo", id, fmt.Sprintf("/shared/demo/chk-%d", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RegisterCheckpoint(ctx, "demo/x", 3, "/other"); err != nil {
		t.Fatal(err)
	}
	ids := func(job string) []int64 {
		t.Helper()
		cps, err := c.Checkpoints(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		out := []int64{}
		for _, cp := range cps {
			if cp.Path != fmt.Sprintf("/shared/demo/chk-%d", cp.ID) && job == "demo" {
				t.Errorf("checkpoint %d has path %q", cp.ID, cp.Path)
			}
			out = append(out, cp.ID)
		}
		return out
	}
	if got := ids("demo"); !reflect.DeepEqual(got, []int64{1, 2, 9, 10, 100}) {
		t.Fatalf("Checkpoints = %v, want ascending 1 2 9 10 100", got)
	}
	if err := l.UnregisterCheckpoints(ctx, "demo", []int64{1, 9, 77}); err != nil {
		t.Fatal(err)
	}
	if got := ids("demo"); !reflect.DeepEqual(got, []int64{2, 10, 100}) {
		t.Fatalf("after unregistering 1 and 9: %v", got)
	}
	// More ids than one transaction takes.
	many := make([]int64, 250)
	for i := range many {
		many[i] = int64(i)
	}
	if err := l.UnregisterCheckpoints(ctx, "demo", many); err != nil {
		t.Fatal(err)
	}
	if got := ids("demo"); !reflect.DeepEqual(got, []int64{}) {
		t.Fatalf("after unregistering 0..249: %v", got)
	}
	if err := l.RegisterCheckpoint(ctx, "demo", 5, "/shared/demo/chk-5"); err != nil {
		t.Fatal(err)
	}
	if err := l.DropCheckpoints(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	if got := ids("demo"); len(got) != 0 {
		t.Fatalf("after DropCheckpoints: %v", got)
	}
	if got := ids("demo/x"); !reflect.DeepEqual(got, []int64{3}) {
		t.Fatalf("another job's checkpoints after DropCheckpoints(demo): %v", got)
	}
	if err := l.RegisterCheckpoint(ctx, "demo", -1, "/p"); err == nil {
		t.Fatal("negative id registered")
	}
}

// The counter only rises, and a new leader continues from the old one's
// bound.
func TestCheckpointIDCounter(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	if n, err := c1.CheckpointIDBound(ctx, "demo"); err != nil || n != 0 {
		t.Fatalf("bound before any reservation = %d, %v", n, err)
	}
	l1 := campaign(t, c1, "jm-1")
	for _, step := range []struct{ upTo, want int64 }{{10, 10}, {5, 10}, {10, 10}, {11, 11}} {
		got, err := l1.ReserveCheckpointIDs(ctx, "demo", step.upTo)
		if err != nil || got != step.want {
			t.Fatalf("Reserve(%d) = %d, %v; want %d", step.upTo, got, err, step.want)
		}
	}
	if _, err := l1.ReserveCheckpointIDs(ctx, "other", 3); err != nil {
		t.Fatal(err)
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l1.ReserveCheckpointIDs(ctx, "demo", 50); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("reservation of a resigned term = %v", err)
	}
	l2 := campaign(t, c2, "jm-2")
	if n, err := c2.CheckpointIDBound(ctx, "demo"); err != nil || n != 11 {
		t.Fatalf("bound seen by the new leader = %d, %v; want 11", n, err)
	}
	if got, err := l2.ReserveCheckpointIDs(ctx, "demo", 7); err != nil || got != 11 {
		t.Fatalf("new leader's Reserve(7) = %d, %v; want 11", got, err)
	}
	if got, err := l2.ReserveCheckpointIDs(ctx, "demo", 20); err != nil || got != 20 {
		t.Fatalf("new leader's Reserve(20) = %d, %v; want 20", got, err)
	}
	// Concurrent reservations of one term end at the largest.
	errc := make(chan error, 10)
	for i := range 10 {
		go func() {
			_, err := l2.ReserveCheckpointIDs(ctx, "demo", int64(100+i))
			errc <- err
		}()
	}
	for range 10 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c1.CheckpointIDBound(ctx, "demo"); err != nil || n != 109 {
		t.Fatalf("bound after concurrent reservations = %d, %v; want 109", n, err)
	}
	if n, _ := c1.CheckpointIDBound(ctx, "other"); n != 3 {
		t.Fatalf("other job's bound = %d", n)
	}
}

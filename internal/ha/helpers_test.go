package ha

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/ha/etcdtest"
)

// testTTL is the lease of the tests: short, so failovers are quick, and
// at least 2 s so that a loaded machine under -race does not miss
// renewals (keepalives go out every TTL/3, on a 500 ms tick).
const testTTL = 2 * time.Second

func testConfig(endpoint string) Config {
	return Config{
		Endpoints:   []string{endpoint},
		ClusterID:   "/test",
		StorageDir:  "/shared/ha",
		LeaseTTL:    testTTL,
		DialTimeout: 2 * time.Second,
	}
}

// connect makes a Client of srv, closed by t.Cleanup.
func connect(t *testing.T, srv *etcdtest.Server) *Client {
	t.Helper()
	c, err := Connect(ctxT(t, 10*time.Second), testConfig(srv.Endpoint()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// campaign makes c lead or fails the test.
func campaign(t *testing.T, c *Client, id string) *Leadership {
	t.Helper()
	l, err := c.Campaign(ctxT(t, 20*time.Second), LeaderInfo{ID: id, RPCAddress: id + ":6123", RESTAddress: id + ":8081"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// campaignAsync campaigns in a goroutine; the result arrives on the
// channel.
func campaignAsync(t *testing.T, c *Client, id string) <-chan *Leadership {
	ch := make(chan *Leadership, 1)
	ctx := ctxT(t, 30*time.Second)
	go func() {
		l, err := c.Campaign(ctx, LeaderInfo{ID: id})
		if err != nil {
			t.Errorf("campaign of %s: %v", id, err)
		}
		ch <- l
	}()
	return ch
}

func waitClosed(t *testing.T, ch <-chan struct{}, within time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ch:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("%s: not within %v", what, within)
		return 0
	}
}

// allFencedWrites runs every fenced write of l and returns their errors.
func allFencedWrites(ctx context.Context, l *Leadership) map[string]error {
	_, rerr := l.ReserveCheckpointIDs(ctx, "demo", 1000)
	return map[string]error{
		"SaveJob":               l.SaveJob(ctx, "demo", []byte("x")),
		"DeleteJob":             l.DeleteJob(ctx, "demo"),
		"RegisterCheckpoint":    l.RegisterCheckpoint(ctx, "demo", 99, "/shared/chk-99"),
		"UnregisterCheckpoints": l.UnregisterCheckpoints(ctx, "demo", []int64{1}),
		"DropCheckpoints":       l.DropCheckpoints(ctx, "demo"),
		"ReserveCheckpointIDs":  rerr,
	}
}

func requireAllNotLeader(t *testing.T, errs map[string]error) {
	t.Helper()
	for op, err := range errs {
		if !errors.Is(err, ErrNotLeader) {
			t.Errorf("%s after the term ended = %v, want ErrNotLeader", op, err)
		}
	}
}

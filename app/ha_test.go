package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/ha"
	"github.com/weirstream/weir/internal/ha/etcdtest"
	"github.com/weirstream/weir/internal/testutil/fakejm"
)

// With high-availability.type: etcd the client commands find the leader
// in etcd: no --jobmanager needed, and an explicit list is tried after
// etcd's answer. The HA keys (credentials too) do not travel with a
// submitted job.
func TestClientsFindLeaderInEtcd(t *testing.T) {
	etcd := etcdtest.Start(t, t.TempDir())
	p, stdout, stderr := testProgram(nil)
	jm := fakejm.Start(t, p.resolve)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli, err := ha.Connect(ctx, ha.Config{Endpoints: []string{etcd.Endpoint()}, ClusterID: "/t", StorageDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lead, err := cli.Campaign(ctx, ha.LeaderInfo{ID: "jm-1", RPCAddress: jm.Addr})
	if err != nil {
		t.Fatal(err)
	}
	haFlags := []string{"-D", "high-availability.type=etcd", "-D", "high-availability.etcd.endpoints=" + etcd.Endpoint(),
		"-D", "high-availability.cluster-id=/t",
		// FromConfig wants it, though clients and TaskManagers do not use it.
		"-D", "high-availability.storageDir=" + t.TempDir()}

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	// etcd here has no auth: the credentials stay out (haFlags). The
	// explicit --jobmanager, dead, is tried after etcd's leader.
	args := append([]string{"run", "count", "--events", "300", "--out", out, "-D", "state.checkpoints.dir=" + dir,
		"--jobmanager", "127.0.0.1:1"}, haFlags...)
	if code := p.Run(ctx, args); code != 0 {
		t.Fatalf("run with the leader in etcd: exit %d: %s", code, stderr)
	}
	wantLines(t, out, 300)
	spec, _ := jm.Spec("count")
	for k := range spec.Config {
		if strings.HasPrefix(k, "high-availability.") {
			t.Errorf("%s travelled with the job", k)
		}
	}

	stdout.Reset()
	if code := p.Run(ctx, append([]string{"list"}, haFlags...)); code != 0 || !strings.Contains(stdout.String(), "count") {
		t.Fatalf("list through etcd: exit %d: %s%s", code, stdout, stderr)
	}

	// The TaskManager's wiring: Locate names the leader, LeaderTerms its
	// term.
	h := leaderFromHA(cli, etcd.Endpoint())
	if addrs, err := h.Locate(ctx); err != nil || len(addrs) != 1 || addrs[0] != jm.Addr {
		t.Fatalf("Locate = %v, %v; want [%s]", addrs, err, jm.Addr)
	}
	select {
	case term := <-h.LeaderTerms(ctx):
		if term != lead.Term() {
			t.Fatalf("LeaderTerms sent %d, want %d", term, lead.Term())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no term from LeaderTerms")
	}

	// No leader: the error names etcd and the fix.
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code := p.Run(ctx, append([]string{"list", "--connect-timeout", "300ms"}, haFlags...))
	for _, w := range []string{"no leader", etcd.Endpoint(), "high-availability.etcd.endpoints"} {
		if code != 1 || !strings.Contains(stderr.String(), w) {
			t.Errorf("list without a leader: exit %d, %q does not contain %q", code, stderr, w)
		}
	}
}

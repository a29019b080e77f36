package runtime

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/network/remote"
)

// TestCancelDuringBuild cancels an execution whose deployment waits for a
// connection from a peer TaskManager that never comes (it was lost: that
// is why the region is being cancelled). The execution reports CANCELED
// at once, not FAILED after the connect timeout: its region's restart
// waits for that report.
func TestCancelDuringBuild(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// tm-z waits for tm-a (the smaller id) to dial it.
	mgr, err := remote.NewConnManager(remote.Config{ResourceID: "tm-z", BuildID: "b", ConnectTimeout: 20 * time.Second}, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	r := newRecorder()
	jg := twoStageGraph(t)
	te := NewTaskExecutor(TaskExecutorConfig{ID: "tm-z", DataAddress: ln.Addr().String(), Network: mgr, JobMaster: r,
		Resolve: func(deployment.JobSpec, string) (*PreparedJob, error) {
			return &PreparedJob{Graph: jg, Config: JobConfig{CreditsPerChannel: 2}}, nil
		}})
	defer te.Close()
	te.PrepareJob(deployment.JobSpec{Name: "j"}, "")
	agg := deployment.ExecutionID{Task: tid(1, 0)}
	te.Deploy(deployment.Deployment{Job: "j", Tasks: []deployment.TaskDeployment{{Exec: agg, Inputs: []deployment.ChannelDesc{
		{Peer: deployment.ExecutionID{Task: tid(0, 0)}, TM: "tm-a", DataAddress: "127.0.0.1:1"},
		{Peer: deployment.ExecutionID{Task: tid(0, 1)}, TM: "tm-a", DataAddress: "127.0.0.1:1"},
	}}}})
	r.wait(t, 1)                      // prepared
	time.Sleep(50 * time.Millisecond) // the build waits for tm-a now
	start := time.Now()
	te.Cancel("j", []deployment.ExecutionID{agg})
	lines := r.wait(t, 2)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the cancelled execution reported after %s: its build waited for the connection", d.Round(time.Millisecond))
	}
	if got, want := lines[1], "state j 1/0#0 CANCELED <nil>"; !strings.HasPrefix(got, want) {
		t.Fatalf("report %q, want %q", got, want)
	}
}

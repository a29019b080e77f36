package nats

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/hooks"
)

// TestSourceRescale stops a job reading three subject splits at
// parallelism 2 once a checkpoint completed (its deserializer fails,
// restarts are off) and runs it from that checkpoint at parallelism 3 to
// the end: the union state hands each split's sequence to its new owner,
// and the committed lines of both runs are each message exactly once.
func TestSourceRescale(t *testing.T) {
	const per = 5000
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "RE", Subjects: []string{"re.>"}})
	var want []string
	for _, sub := range []string{"a", "b", "c"} {
		publishN(t, js, "re."+sub, sub+"-", 0, per)
		want = append(want, payloads(sub+"-", 0, per)...)
	}
	slices.Sort(want)
	out := filepath.Join(t.TempDir(), "out")
	errStop := errors.New("stop")
	build := func(stop bool) func(env *weir.Env) {
		return func(env *weir.Env) {
			var read atomic.Int64
			de := func(m *Msg) (string, error) {
				// After half the messages the run stops even without a
				// checkpoint; the next run then starts afresh, which the
				// exactness check covers too.
				if c := read.Add(1); stop && (hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 1 || c > 3*per/2) {
					return "", errStop
				}
				return string(m.Data), nil
			}
			s := weir.FromSource(env, Source(ts.url, "RE", de, WithBounded(), WithSubjects("re.a", "re.b", "re.c"))).UID("nats")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		}
	}
	j := newJob(t, 2)
	j.restartNone = true
	if res := j.run(t, build(true)); !errors.Is(res.err, errStop) {
		t.Fatalf("run at parallelism 2 = %v, want it stopped", res.err)
	}
	j.parallelism, j.restartNone = 3, false
	res := j.run(t, build(false))
	if res.err != nil {
		t.Fatalf("run at parallelism 3: %v\nlog:\n%s", res.err, res.log)
	}
	if !strings.Contains(res.log.String(), "msg=restoring") {
		t.Log("the first run stopped before a checkpoint: the second started afresh")
	}
	if got := readFiles(t, out); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly: %s", len(got), len(want), firstDiff(want, got))
	}
}

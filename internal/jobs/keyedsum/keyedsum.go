// Package keyedsum is weir's built-in keyed-sum job: the demo's generated
// events keyed by account, each account's count and total in keyed state,
// and a sink that counts the results and drops them. With nothing written
// out, its throughput is that of the sources, the shuffle and the keyed
// aggregation; weir run keyed-sum and the benches (internal/bench) build
// the same graph with Build.
//
// Owns: the keyed-sum job. Must not touch: engine internals; it is built
// with the public API.
package keyedsum

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// Options are the job's parameters.
type Options struct {
	Records, Keys int64
	// Seen counts the results the sinks of this build received, once per
	// batch (required).
	Seen *atomic.Int64
	// CountDir, if set, is where each sink subtask writes its count when it
	// closes (count-<subtask>), for a side that does not share the sinks'
	// memory; ReadCounts adds them up.
	CountDir string
	// SinkName is the sink's name and uid ("count" when empty).
	SinkName string
}

// Build declares the job's graph on env.
func Build(env *weir.Env, o Options) {
	name := o.SinkName
	if name == "" {
		name = "count"
	}
	results := demo.Aggregate(env, demo.Options{Events: o.Records, Keys: o.Keys})
	weir.SinkTo(results, func() weir.Sink[demo.Result] { return &countSink{seen: o.Seen, dir: o.CountDir} }).Name(name).UID(name)
}

// ReadCounts adds up the count files the sink subtasks wrote into dir.
func ReadCounts(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "count-*"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("keyed-sum: no sink wrote its count into --count-dir %s: do the TaskManagers reach that folder at the same path?", dir)
	}
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("keyed-sum: read a sink's count: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("keyed-sum: sink count %s: %w", f, err)
		}
		sum += n
	}
	return sum, nil
}

// RemoveCounts removes the count files of an earlier run from dir, which
// would otherwise add to this run's (perhaps from a higher parallelism).
func RemoveCounts(dir string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "count-*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("remove an earlier run's count: %w", err)
		}
	}
	return nil
}

// countSink discards results, counting them once per batch into seen and,
// with a dir, writing its own count into dir/count-<subtask> when it
// closes.
type countSink struct {
	seen    *atomic.Int64
	dir     string
	subtask int
	n       int64
	sum     int64 // keeps the results' fields live
}

func (s *countSink) Open(_ context.Context, rc *weir.RuntimeContext) error {
	s.subtask = rc.Subtask()
	return nil
}

func (s *countSink) Write(_ context.Context, b []demo.Result) error {
	for i := range b {
		s.sum += b[i].Count ^ b[i].Total
	}
	s.n += int64(len(b))
	s.seen.Add(int64(len(b)))
	return nil
}

func (s *countSink) Flush(context.Context) error { return nil }

func (s *countSink) Close(context.Context) error {
	if s.dir == "" {
		return nil
	}
	f := filepath.Join(s.dir, fmt.Sprintf("count-%d", s.subtask))
	if err := os.WriteFile(f, []byte(strconv.FormatInt(s.n, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("keyed-sum: write the sink's count: %w", err)
	}
	return nil
}

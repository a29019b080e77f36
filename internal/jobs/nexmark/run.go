package nexmark

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// BuildQuery adds query q over events 0 … n-1 of p.Gen to env: the
// generator's source (throttled to rateLimit events per wall-clock second
// over all subtasks, 0 = unthrottled) with Flink's watermarks, the query,
// and its sink (p.Out, or discarding with no p.Out). It is what
// `weir run nexmark` and `weir bench nexmark` build, so both run exactly
// the job the tests check.
func BuildQuery(env *weir.Env, q *Query, n int64, rateLimit float64, p Params) error {
	return q.Build(env, nexmark.Events(env, p.Gen, n, rateLimit), p)
}

// BuildGenerator adds the generator alone to env: events 0 … n-1 of cfg
// with their watermarks into a sink that drops them, at the environment's
// parallelism. The benchmark measures it as the floor every query pays.
func BuildGenerator(env *weir.Env, cfg nexmark.Config, n int64) {
	events := nexmark.Events(env, cfg, n, 0)
	weir.SinkTo(events, func() weir.Sink[nexmark.Event] { return discard[nexmark.Event]{} }).Name("discard").UID("sink")
}

// ReadCommitted returns the committed lines of a query's output folder in
// commit order per sink subtask: file.ReadCommitted reads part files in
// name order, and "part-<uid>-<subtask>-<seq>" with an unpadded seq sorts
// part-files-0-10 before part-files-0-9, which would apply a changelog's
// -U before the +I it retracts. Here files are ordered by uid, then
// subtask and sequence number as numbers; a key's changes all come from
// one subtask, so applying the lines in this order is applying them in
// commit order.
func ReadCommitted(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read committed output: %w", err)
	}
	type part struct {
		name, uid    string
		subtask, seq uint64
	}
	var parts []part
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, "part-") {
			continue
		}
		p := part{name: name}
		rest, seq, ok1 := cutLast(name)
		uid, sub, ok2 := cutLast(rest)
		if ok1 && ok2 {
			p.uid, p.subtask, p.seq = uid, sub, seq
		} else {
			p.uid = name // not a sink part name: after the others, by name
		}
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		if a.uid != b.uid {
			return a.uid < b.uid
		}
		if a.subtask != b.subtask {
			return a.subtask < b.subtask
		}
		return a.seq < b.seq
	})
	var lines []string
	for _, p := range parts {
		b, err := os.ReadFile(filepath.Join(dir, p.name))
		if err != nil {
			return nil, fmt.Errorf("read committed output: %w", err)
		}
		if len(b) == 0 {
			continue // an empty transaction, not one empty line
		}
		b = bytes.TrimSuffix(b, []byte{'\n'})
		for l := range bytes.SplitSeq(b, []byte{'\n'}) {
			lines = append(lines, string(l))
		}
	}
	return lines, nil
}

// cutLast splits "a-b-7" into "a-b" and 7.
func cutLast(s string) (string, uint64, bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	return s[:i], n, err == nil
}

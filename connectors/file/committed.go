package file

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ReadCommitted returns every line of every visible part file in dir: what
// a downstream reader that ignores dot-files sees, in commit order per sink
// subtask. Part files "part-<uid>-<subtask>-<seq>" are ordered by uid, then
// subtask and sequence number as numbers (by name, part-x-0-10 would come
// before part-x-0-9, and a changelog's retraction before the row it
// retracts); other visible files follow, by name. It is meant for tests and
// for verifying a job's output.
func ReadCommitted(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read committed output: %w", err)
	}
	type part struct {
		name, uid    string
		subtask, seq uint64
		other        bool
	}
	var parts []part
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, partPrefix) {
			continue
		}
		p := part{name: name}
		rest, seq, ok1 := cutNumber(name)
		uid, sub, ok2 := cutNumber(rest)
		p.uid, p.subtask, p.seq, p.other = uid, sub, seq, !ok1 || !ok2
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b part) int {
		if a.other != b.other {
			return cmp.Compare(boolInt(a.other), boolInt(b.other))
		}
		if a.other {
			return strings.Compare(a.name, b.name)
		}
		return cmp.Or(strings.Compare(a.uid, b.uid), cmp.Compare(a.subtask, b.subtask), cmp.Compare(a.seq, b.seq))
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

// cutNumber splits "a-b-7" into "a-b" and 7.
func cutNumber(s string) (string, uint64, bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	return s[:i], n, err == nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

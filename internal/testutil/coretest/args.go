package coretest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Int returns the integer argument key=N of d's command, or def when the
// command has none.
func Int(t testing.TB, d *datadriven.TestData, key string, def int) int {
	t.Helper()
	v := def
	d.MaybeScanArgs(t, key, &v)
	return v
}

// MustInt returns the integer argument key=N and fails the script when
// the command has none.
func MustInt(t testing.TB, d *datadriven.TestData, key string) int {
	t.Helper()
	need(t, d, key)
	var v int
	d.ScanArgs(t, key, &v)
	return v
}

// Dur returns the duration argument key=D (time.ParseDuration: 150ms,
// 2s), or def when the command has none.
func Dur(t testing.TB, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	return MustDur(t, d, key)
}

// MustDur returns the duration argument key=D and fails the script when
// the command has none.
func MustDur(t testing.TB, d *datadriven.TestData, key string) time.Duration {
	t.Helper()
	need(t, d, key)
	var s string
	d.ScanArgs(t, key, &s)
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, s, err)
	}
	return v
}

// Err returns an error with the text of the argument key=S
// (err=disk-full: the storage operation fails with "disk-full"), or nil
// when the command has none.
func Err(t testing.TB, d *datadriven.TestData, key string) error {
	t.Helper()
	if !d.HasArg(key) {
		return nil
	}
	var s string
	d.ScanArgs(t, key, &s)
	return errors.New(s)
}

// List returns the values of every key= argument of d's command, each
// split at commas, so that key=a,b, key=(a,b) and key=a key=b all read
// [a b]. It returns nil when the command has none.
func List(d *datadriven.TestData, key string) []string {
	var out []string
	for _, arg := range d.CmdArgs {
		if arg.Key != key {
			continue
		}
		for _, v := range arg.Vals {
			out = append(out, strings.Split(v, ",")...)
		}
	}
	return out
}

// ParseTask parses a task written V/I (vertex V, subtask I) or V
// (subtask 0).
func ParseTask(s string) (checkpoint.TaskID, error) {
	v, i, sub := strings.Cut(s, "/")
	vertex, err := strconv.Atoi(v)
	subtask := 0
	if err == nil && sub {
		subtask, err = strconv.Atoi(i)
	}
	if err != nil || vertex < 0 || subtask < 0 {
		return checkpoint.TaskID{}, fmt.Errorf("task %q: want V/I or V", s)
	}
	return checkpoint.TaskID{Vertex: vertex, Subtask: subtask}, nil
}

// Task parses a task of d's script, V/I or V (ParseTask), failing the
// script when s is neither: a task in a script's input lines.
func Task(t testing.TB, d *datadriven.TestData, s string) checkpoint.TaskID {
	t.Helper()
	task, err := ParseTask(s)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return task
}

// Tasks returns the tasks named by the key= arguments of d's command (as
// List reads them), each V/I or V; key=all returns all. It fails the
// script when the command has none or a task does not parse.
func Tasks(t testing.TB, d *datadriven.TestData, key string, all []checkpoint.TaskID) []checkpoint.TaskID {
	t.Helper()
	need(t, d, key)
	vals := List(d, key)
	if all != nil && len(vals) == 1 && vals[0] == "all" {
		return all
	}
	out := make([]checkpoint.TaskID, len(vals))
	for k, v := range vals {
		task, err := ParseTask(v)
		if err != nil {
			d.Fatalf(t, "%s=%s: %v", key, v, err)
		}
		out[k] = task
	}
	return out
}

// TS parses a timestamp in milliseconds, or min and max for the smallest
// and largest int64 (the watermarks before any data and at the end of
// input). It fails the script when s is neither.
func TS(t testing.TB, d *datadriven.TestData, s string) int64 {
	t.Helper()
	switch s {
	case "min":
		return math.MinInt64
	case "max":
		return math.MaxInt64
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d.Fatalf(t, "bad timestamp %q: %v", s, err)
	}
	return v
}

// need fails the script when its command has no key= argument.
func need(t testing.TB, d *datadriven.TestData, key string) {
	t.Helper()
	if !d.HasArg(key) {
		d.Fatalf(t, "missing %s=", key)
	}
}

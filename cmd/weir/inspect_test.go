package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/inspect"
	"github.com/weirstream/weir/internal/keygroup"
)

// inspectKeys is the demo's account count in these tests; 7919 is prime,
// so every one of them gets events.
const inspectKeys = 300

// killedDemo runs an unbounded demo with --keys inspectKeys, SIGKILLs it
// once three checkpoints completed and returns its state dir and the
// folder of its newest checkpoint. (A run that finished leaves none: its
// checkpoints are discarded.)
func killedDemo(t *testing.T) (dir, chk string, id int) {
	t.Helper()
	dir = t.TempDir()
	ids := killMidRun(t, []string{"run", "demo", "--events", "0", "--rate", "20000", "--keys", strconv.Itoa(inspectKeys),
		"--parallelism", "2", "--checkpoint-interval", "50ms", "--state-dir", filepath.Join(dir, "state"),
		"--out", filepath.Join(dir, "out"), "-q"}, filepath.Join(dir, "state", "demo"), 3)
	id = ids[len(ids)-1]
	return dir, chkPath(dir, id), id
}

// TestInspectDemo inspects the newest checkpoint of a killed demo run:
// the three operators, key-group ranges that partition [0,128), exactly
// one "totals" entry per account, the sink's pending transaction; and the
// text form states what the JSON form holds.
func TestInspectDemo(t *testing.T) {
	_, chk, id := killedDemo(t)
	res := runWeir(t, 30*time.Second, "checkpoints", "inspect", "--json", filepath.Join(chk, "_metadata"))
	wantExit(t, res, 0)
	var r inspect.Report
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, res.stdout)
	}
	if r.Path != chk || r.Job != "demo" || r.ID != checkpoint.ID(id) || r.Kind != "periodic" {
		t.Errorf("header: path %q job %q id %d kind %q, want %q demo %d periodic", r.Path, r.Job, r.ID, r.Kind, chk, id)
	}
	var uids []string
	for _, op := range r.Operators {
		uids = append(uids, op.UID)
		if op.Parallelism != 2 || op.MaxParallelism != 128 || len(op.Subtasks) != 2 {
			t.Errorf("operator %q: parallelism %d, max %d, %d subtasks; want 2, 128, 2", op.UID, op.Parallelism, op.MaxParallelism, len(op.Subtasks))
		}
	}
	if want := []string{"events", "aggregate", "files"}; !reflect.DeepEqual(uids, want) {
		t.Fatalf("operators %q, want %q", uids, want)
	}

	next := 0 // the assigned ranges must tile [0,128) in subtask order
	for i, s := range r.Operators[1].Subtasks {
		k := s.Keyed
		if s.Index != i || k == nil {
			t.Fatalf("aggregate subtask %d: index %d, keyed %v", i, s.Index, k)
		}
		rf := keygroup.RangeFor(128, 2, i)
		if k.Assigned != (inspect.Range{Start: rf.Start, End: rf.End}) || k.Assigned.Start != next {
			t.Errorf("subtask %d assigned %v, want %v starting at %d", i, k.Assigned, rf, next)
		}
		next = k.Assigned.End
		if k.Covered == nil || k.Covered.Start < k.Assigned.Start || k.Covered.End > k.Assigned.End || k.OutsideAssigned != 0 || k.Blocks == 0 {
			t.Errorf("subtask %d: covered %v, %d blocks, %d outside assigned %v", i, k.Covered, k.Blocks, k.OutsideAssigned, k.Assigned)
		}
		if len(k.States) != 1 || k.States[0].Name != "totals" || k.States[0].Kind != "value" || k.Timers != 0 {
			t.Errorf("subtask %d: states %+v, %d timers; want only value state totals", i, k.States, k.Timers)
		}
		if want := fmt.Sprintf("chk-%d/aggregate-", id); !strings.HasPrefix(k.File, want) {
			t.Errorf("subtask %d keyed file %q, want one in chk-%d", i, k.File, id)
		}
	}
	if next != 128 {
		t.Errorf("assigned ranges end at %d, want 128", next)
	}
	tot := r.Totals
	if len(tot.KeyedStates) != 1 || tot.KeyedStates[0].Operator != "aggregate" || tot.KeyedStates[0].Name != "totals" || tot.KeyedStates[0].Entries != inspectKeys {
		t.Errorf("keyed state totals %+v, want aggregate/totals with %d entries", tot.KeyedStates, inspectKeys)
	}
	if tot.Operators != 3 || tot.Subtasks != 6 || tot.KeyedFiles != 2 {
		t.Errorf("totals: %d operators, %d subtasks, %d keyed files; want 3, 6, 2", tot.Operators, tot.Subtasks, tot.KeyedFiles)
	}
	for _, s := range r.Operators[2].Subtasks {
		want := []inspect.ListState{{Name: "two-phase-commit", Elements: 1, Bytes: s.OperatorState[0].Bytes,
			TwoPhaseCommit: &inspect.TwoPhaseCommit{Pending: []checkpoint.ID{checkpoint.ID(id)}, Open: 1}}}
		if !reflect.DeepEqual(s.OperatorState, want) || s.Keyed != nil {
			t.Errorf("files subtask %d: %+v, want the checkpoint's transaction pending: %+v", s.Index, s.OperatorState, want)
		}
	}
	for _, s := range r.Operators[0].Subtasks {
		if len(s.OperatorState) != 1 || s.OperatorState[0].Name != "datagen-position" || !s.OperatorState[0].Union || s.OperatorState[0].Elements != 1 {
			t.Errorf("events subtask %d: %+v, want one union datagen-position element", s.Index, s.OperatorState)
		}
	}

	txt := runWeir(t, 30*time.Second, "checkpoints", "inspect", chk)
	wantExit(t, txt, 0)
	k0, k1, totals := r.Operators[1].Subtasks[0].Keyed, r.Operators[1].Subtasks[1].Keyed, tot.KeyedStates[0]
	for _, l := range []string{
		fmt.Sprintf("checkpoint %d of job \"demo\": periodic, taken %s", id, r.Timestamp.UTC().Format(time.RFC3339Nano)),
		`operator "aggregate": parallelism 2, max parallelism 128`,
		fmt.Sprintf("    key groups [%d,%d) in %d blocks; assigned [0,64)", k0.Covered.Start, k0.Covered.End, k0.Blocks),
		fmt.Sprintf("    keyed file %s: %d bytes, crc32c 0x%08x", k1.File, k1.Size, k1.CRC32C),
		fmt.Sprintf("    keyed value state \"totals\": %d keys, %d bytes in %d key groups", k1.States[0].Entries, k1.States[0].Bytes, k1.States[0].KeyGroups),
		fmt.Sprintf("    list state \"two-phase-commit\": 1 element, %d bytes; pending transaction of checkpoint %d; 1 transaction open", r.Operators[2].Subtasks[1].OperatorState[0].Bytes, id),
		fmt.Sprintf("    union list state \"datagen-position\": 1 element, %d bytes", r.Operators[0].Subtasks[0].OperatorState[0].Bytes),
		"channel state: none (aligned checkpoint; no records in flight stored)",
		"shared files: none (full checkpoints; no incremental state)",
		fmt.Sprintf("  aggregate keyed value state \"totals\": %d keys, %d bytes in %d key groups", inspectKeys, totals.Bytes, totals.KeyGroups),
	} {
		wantLine(t, txt.stdout, l)
	}
}

// TestInspectErrors: a flipped byte in a keyed state file exits 1 naming
// the file; paths that are no checkpoint exit 2 naming the path.
func TestInspectErrors(t *testing.T) {
	dir, chk, _ := killedDemo(t)
	damaged := corruptCheckpoint(t, chk)
	if !strings.HasSuffix(damaged, ".keyed") {
		t.Fatalf("corrupted %s, want a keyed state file", damaged)
	}
	for _, args := range [][]string{{chk}, {"--json", chk}} {
		r := runWeir(t, 30*time.Second, append([]string{"checkpoints", "inspect"}, args...)...)
		wantExit(t, r, 1)
		wantContains(t, r.stderr, damaged+": checkpoint data corrupt: checksum mismatch")
		if r.stdout != "" {
			t.Errorf("stdout of a failed inspect: %q", r.stdout)
		}
	}
	plain := filepath.Join(dir, "out")
	for _, tc := range []struct{ path, want string }{
		{plain, plain + ": not a completed checkpoint: not a chk-<n> directory"},
		{filepath.Join(dir, "nope"), filepath.Join(dir, "nope") + ": not a completed checkpoint: no such file or directory"},
	} {
		r := runWeir(t, 30*time.Second, "checkpoints", "inspect", tc.path)
		wantExit(t, r, 2)
		wantContains(t, r.stderr, tc.want)
	}
	wantExit(t, runWeir(t, 30*time.Second, "checkpoints", "inspect"), 2)
}

// TestPrintReportChannelState pins the text form of an unaligned
// checkpoint's channel state: per subtask under its operator, and summed.
func TestPrintReportChannelState(t *testing.T) {
	r := &inspect.Report{
		Path: "/s/job/chk-3", Job: "job", ID: 3, Kind: "periodic", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Operators: []inspect.Operator{{UID: "agg", Parallelism: 2, MaxParallelism: 128, Subtasks: []inspect.Subtask{{Index: 0}, {Index: 1}}}},
		ChannelState: []inspect.ChannelState{{Operator: "agg", Subtask: 1, File: "chk-3/agg-1.channel", Size: 300, CRC32C: 0xabc, Inputs: []inspect.InputChannel{
			{Input: 0, ProducerUID: "src", Producer: 1, ProducerParallelism: 2, GateChannel: 1, Segments: 2, Batches: 3, Records: 40, Bytes: 250},
			{Input: 1, ProducerUID: "side", Producer: 0, ProducerParallelism: 1, GateChannel: -1},
		}}},
		SharedFiles: []inspect.SharedFile{},
		Totals:      inspect.Totals{Operators: 1, Subtasks: 2, ChannelStateFiles: 1, ChannelStateBytes: 300, InFlightRecords: 40},
	}
	var b strings.Builder
	if err := printReport(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range []string{
		"  verified: metadata and 0 keyed state files (0 bytes) and 1 channel-state file (300 bytes), checksums match",
		"  subtask 0",
		"    no state",
		"    channel-state file chk-3/agg-1.channel: 300 bytes, crc32c 0x00000abc",
		`    in flight on input 0 from "src" subtask 1 of 2 (gate channel 1): 40 records, 3 batches in 2 segments, 250 bytes`,
		`    in flight on input 1 from "side" subtask 0 of 1 (nothing recorded): 0 records, 0 batches in 0 segments, 0 bytes`,
		"channel state: 1 subtask, 2 input channels, 40 records in flight; 1 file (300 bytes)",
		"shared files: none (full checkpoints; no incremental state)",
	} {
		wantLine(t, out, l)
	}
	if strings.Count(out, "no state") != 1 {
		t.Errorf("subtask 1 has channel state, yet is printed without state:\n%s", out)
	}
}

// TestPrintReportEventTime pins the text form of TTL states and the two
// timer sets: per subtask, in an LSM store's timers file, and summed.
func TestPrintReportEventTime(t *testing.T) {
	k := &inspect.Keyed{File: "chk-2/win-0.keyed", Size: 90, Assigned: inspect.Range{Start: 0, End: 128}, Blocks: 1, Covered: &inspect.Range{Start: 3, End: 4},
		States: []inspect.KeyedState{{Name: "last", Kind: "value", TTL: true, Entries: 2, Bytes: 20, KeyGroups: 1}, {Name: "n", Kind: "value", Entries: 1, Bytes: 5, KeyGroups: 1}},
		Timers: 1, TimerBytes: 4, EventTimers: 6, EventTimerBytes: 30}
	inc := &inspect.Incremental{StoreID: "s1", KeyGroups: inspect.Range{Start: 0, End: 128}, Assigned: inspect.Range{Start: 0, End: 128},
		States: []inspect.StoreState{{Name: "buf", Kind: "list", TTL: true, ID: 1}}, Private: []inspect.PrivateFile{},
		TimersFile: "chk-2/win-1.timers", TimersSize: 40, EventTimers: 3}
	r := &inspect.Report{
		Path: "/s/job/chk-2", Job: "job", ID: 2, Kind: "periodic", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Operators:   []inspect.Operator{{UID: "win", Parallelism: 2, MaxParallelism: 128, Subtasks: []inspect.Subtask{{Index: 0, Keyed: k}, {Index: 1, Incremental: inc}}}},
		SharedFiles: []inspect.SharedFile{},
		Totals: inspect.Totals{Operators: 1, Subtasks: 2, KeyedFiles: 1, KeyedBytes: 90, KeyGroups: 1, Timers: 1, EventTimers: 9,
			KeyedStates: []inspect.OperatorKeyedState{{Operator: "win", KeyedState: k.States[0]}}},
	}
	var b strings.Builder
	if err := printReport(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range []string{
		`    keyed value state with TTL "last": 2 keys, 20 bytes in 1 key group`,
		`    keyed value state "n": 1 key, 5 bytes in 1 key group`,
		"    timers: 1 (4 bytes)",
		"    event-time timers: 6 (30 bytes)",
		`    keyed list state with TTL "buf" (id 1)`,
		"    timers file chk-2/win-1.timers: 40 bytes, 0 processing-time timers, 3 event-time timers",
		"totals: 1 operator, 2 subtasks; 1 keyed state file (90 bytes) with 1 key-group block; 1 processing-time timer, 9 event-time timers",
		`  win keyed value state with TTL "last": 2 keys, 20 bytes in 1 key group`,
	} {
		wantLine(t, out, l)
	}
}

package inspect

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/twophase"
)

const maxP = 128

// keyedFixture fills the backend of subtask 1 of 2 (key groups [64,128))
// with one state of every kind and timers, with known entry counts:
// "count" 100 keys over all 64 groups, "events" 10 keys, "seen" 5 keys,
// "sum" 1 key, 7 timers.
func keyedFixture(t *testing.T) *state.KeyedBackend[int64] {
	t.Helper()
	b := state.NewKeyedBackend(mustCodec[int64](t), keygroup.RangeFor(maxP, 2, 1), maxP)
	count, err := state.RegisterValue(b, "count", mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	events, err := state.RegisterList(b, "events", mustCodec[string](t))
	if err != nil {
		t.Fatal(err)
	}
	seen, err := state.RegisterMap(b, "seen", mustCodec[string](t), mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := state.RegisterReducing(b, "sum", func(a, b int64) int64 { return a + b }, mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	kg := func(k int64) int { return 64 + int(k%64) }
	for k := range int64(100) {
		b.SetCurrentKey(k, kg(k))
		count.Update(k)
		if k < 10 {
			events.AddAll([]string{"a", "b", "c"}) // elements are not keys
		}
		if k < 5 {
			seen.Put("x", k)
			seen.Put("y", k)
		}
		if k == 7 {
			sum.Add(3)
			sum.Add(4)
		}
		if k == 1 {
			for ts := range int64(5) {
				b.Timers().Register(1000 + ts)
			}
		}
		if k == 2 {
			b.Timers().Register(1)
			b.Timers().Register(2)
		}
	}
	return b
}

// TestInspect writes a checkpoint of a keyed operator (its subtask 0 has
// no keys), a source-like operator with list state and a 2PC sink, and
// checks every count of the report. It also pins the block format's kind
// bytes to internal/state's: a drift makes the kinds below wrong.
func TestInspect(t *testing.T) {
	s := openStorage(t)
	empty := state.NewKeyedBackend(mustCodec[int64](t), keygroup.RangeFor(maxP, 2, 0), maxP)
	h0 := writeKeyed(t, s, 3, "agg-0.keyed", empty)
	h1 := writeKeyed(t, s, 3, "agg-1.keyed", keyedFixture(t))
	tp := encode2PC(t, twophase.State[[]byte]{
		Pending:    []twophase.Pending[[]byte]{{ID: 2, Txn: []byte("t2")}, {ID: 3, Txn: []byte("t3")}},
		Current:    []byte("t4"),
		HasCurrent: true,
	})
	dir := commit(t, s, 3, checkpoint.Periodic,
		checkpoint.OperatorState{UID: "src", Parallelism: 1, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "src", Operator: map[string][][]byte{
				"offsets": {{1, 2, 3}, {4}}, "empty": {}, "union/offsets": {{9}},
			}}},
		}},
		checkpoint.OperatorState{UID: "agg", Parallelism: 2, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "agg", Keyed: h0}},
			{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "agg", Keyed: h1}},
		}},
		checkpoint.OperatorState{UID: "sink", Parallelism: 1, MaxParallelism: maxP, Subtasks: []checkpoint.SubtaskStateEntry{
			{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "sink", Operator: map[string][][]byte{twoPhaseStateName: {tp}}}},
		}},
	)

	r, err := Inspect(context.Background(), filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != dir || r.Job != testJob || r.ID != 3 || r.Kind != "periodic" || r.Timestamp.Nanosecond() != 6 {
		t.Errorf("header: path %q job %q id %d kind %q ts %s", r.Path, r.Job, r.ID, r.Kind, r.Timestamp)
	}
	if len(r.ChannelState) != 0 || r.ChannelState == nil || len(r.SharedFiles) != 0 || r.SharedFiles == nil {
		t.Errorf("channel state %v, shared files %v: want both empty and non-nil", r.ChannelState, r.SharedFiles)
	}
	if len(r.Operators) != 3 {
		t.Fatalf("%d operators, want 3", len(r.Operators))
	}
	wantSrc := []ListState{{Name: "empty", Elements: 0, Bytes: 0}, {Name: "offsets", Elements: 2, Bytes: 4}, {Name: "offsets", Union: true, Elements: 1, Bytes: 1}}
	if got := r.Operators[0].Subtasks[0]; got.Keyed != nil || !reflect.DeepEqual(got.OperatorState, wantSrc) {
		t.Errorf("src subtask: keyed %+v, lists %+v, want lists %+v", got.Keyed, got.OperatorState, wantSrc)
	}

	agg := r.Operators[1]
	if agg.UID != "agg" || agg.Parallelism != 2 || agg.MaxParallelism != maxP || len(agg.Subtasks) != 2 {
		t.Fatalf("agg operator: %+v", agg)
	}
	k0 := agg.Subtasks[0].Keyed
	want0 := &Keyed{File: "chk-3/agg-0.keyed", Size: 0, CRC32C: h0.File.CRC32C, Assigned: Range{0, 64}, States: []KeyedState{}}
	if !reflect.DeepEqual(k0, want0) {
		t.Errorf("empty subtask keyed:\n got %+v\nwant %+v", k0, want0)
	}
	k1 := agg.Subtasks[1].Keyed
	if k1.File != "chk-3/agg-1.keyed" || k1.Size != h1.File.Size || k1.Assigned != (Range{64, 128}) ||
		k1.Covered == nil || *k1.Covered != (Range{64, 128}) || k1.Blocks != 64 || k1.OutsideAssigned != 0 || k1.Timers != 7 {
		t.Errorf("subtask 1 keyed: %+v (covered %v)", k1, k1.Covered)
	}
	// Strip sizes for the exact comparison; they are checked below.
	var bytes int64
	got := append([]KeyedState(nil), k1.States...)
	for i := range got {
		if got[i].Bytes <= 0 {
			t.Errorf("state %q: %d bytes", got[i].Name, got[i].Bytes)
		}
		bytes += got[i].Bytes
		got[i].Bytes = 0
	}
	wantStates := []KeyedState{
		{Name: "count", Kind: "value", Entries: 100, KeyGroups: 64},
		{Name: "events", Kind: "list", Entries: 10, KeyGroups: 10},
		{Name: "seen", Kind: "map", Entries: 5, KeyGroups: 5},
		{Name: "sum", Kind: "reducing", Entries: 1, KeyGroups: 1},
	}
	if !reflect.DeepEqual(got, wantStates) {
		t.Errorf("states:\n got %+v\nwant %+v", got, wantStates)
	}
	if bytes+k1.TimerBytes >= k1.Size || k1.TimerBytes <= 0 {
		t.Errorf("payloads %d + timers %d bytes, file %d: payloads must be positive and smaller than the file", bytes, k1.TimerBytes, k1.Size)
	}

	wantSink := []ListState{{Name: twoPhaseStateName, Elements: 1, Bytes: int64(len(tp)),
		TwoPhaseCommit: &TwoPhaseCommit{Pending: []checkpoint.ID{2, 3}, Open: 1}}}
	if got := r.Operators[2].Subtasks[0].OperatorState; !reflect.DeepEqual(got, wantSink) {
		t.Errorf("sink lists:\n got %+v\nwant %+v", got, wantSink)
	}

	tot := r.Totals
	wantTot := Totals{Operators: 3, Subtasks: 4, KeyedFiles: 2, KeyedBytes: h1.File.Size, KeyGroups: 64, Timers: 7,
		KeyedStates: []OperatorKeyedState{
			{"agg", k1.States[0]}, {"agg", k1.States[1]}, {"agg", k1.States[2]}, {"agg", k1.States[3]},
		},
		OperatorStates: []OperatorListState{
			{Operator: "src", Name: "empty"}, {Operator: "src", Name: "offsets", Elements: 2, Bytes: 4},
			{Operator: "src", Name: "offsets", Union: true, Elements: 1, Bytes: 1},
			{Operator: "sink", Name: twoPhaseStateName, Elements: 1, Bytes: int64(len(tp))},
		},
	}
	if !reflect.DeepEqual(tot, wantTot) {
		t.Errorf("totals:\n got %+v\nwant %+v", tot, wantTot)
	}
}

// TestByteCounts pins the sizes on a block small enough to lay out by
// hand: one key of a value state in key group 5.
func TestByteCounts(t *testing.T) {
	s := openStorage(t)
	b := state.NewKeyedBackend(mustCodec[int64](t), keygroup.RangeFor(maxP, 1, 0), maxP)
	v, err := state.RegisterValue(b, "v", mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	b.SetCurrentKey(42, 5)
	v.Update(1 << 40)
	h := writeKeyed(t, s, 1, "k", b)
	dir := commit(t, s, 1, checkpoint.Final, checkpoint.OperatorState{UID: "op", Parallelism: 1, MaxParallelism: maxP,
		Subtasks: []checkpoint.SubtaskStateEntry{{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "op", Keyed: h}}}})
	r, err := Inspect(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	payload := int64(1 + len(mustCodec[int64](t).Append(nil, 42)) + len(mustCodec[int64](t).Append(nil, 1<<40)))
	// version, key group, #sections, len("v"), "v", kind, payload length.
	if want := 7 + payload; h.File.Size != want {
		t.Fatalf("file is %d bytes, want %d: the block layout changed", h.File.Size, want)
	}
	k := r.Operators[0].Subtasks[0].Keyed
	want := []KeyedState{{Name: "v", Kind: "value", Entries: 1, Bytes: payload, KeyGroups: 1}}
	if r.Kind != "final" || !reflect.DeepEqual(k.States, want) || *k.Covered != (Range{5, 6}) || k.Assigned != (Range{0, 128}) {
		t.Errorf("kind %q, keyed %+v (covered %v), want states %+v", r.Kind, k, k.Covered, want)
	}
}

func TestCorrupt(t *testing.T) {
	block := func(kg int, tail ...byte) []byte {
		b := binary.AppendUvarint([]byte{blockVersion}, uint64(kg))
		return append(b, tail...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		kg   int
		want string
	}{
		{"version", []byte{9, 3, 0}, 3, "unknown block version"},
		{"wrong key group", block(4, 0), 3, "block names key group 4"},
		{"kind", block(3, 1, 1, 'a', 9, 1, 0), 3, `state "a": unknown kind 9`},
		{"timers with a name", block(3, 1, 1, 'a', byte(state.KindTimers), 1, 0), 3, `state "a": unknown kind 5`},
		{"event timers with a name", block(3, 1, 1, 'a', byte(state.KindEventTimers), 1, 0), 3, `state "a": unknown kind 6`},
		{"state without a name", block(3, 1, 0, byte(state.KindValue), 1, 0), 3, `state "": unknown kind 1`},
		{"TTL timers", block(3, 1, 0, byte(state.KindTTL|state.KindEventTimers), 1, 0), 3, `state "": unknown kind 134`},
		{"TTL without a kind", block(3, 1, 1, 'a', byte(state.KindTTL), 1, 0), 3, `state "a": unknown kind 128`},
		{"TTL state changes kind", block(3, 2, 1, 'a', byte(state.KindTTL|state.KindValue), 1, 0, 1, 'a', byte(state.KindValue), 1, 0), 3, `state "a" is value state here and value state with TTL in an earlier key group`},
		{"payload length", block(3, 1, 1, 'a', byte(state.KindValue), 5, 0), 3, `state "a": length 5 exceeds the 1 bytes left`},
		{"trailing", block(3, 1, 1, 'a', byte(state.KindValue), 1, 0, 7), 3, "1 bytes after the last section"},
		{"key count", block(3, 1, 1, 'a', byte(state.KindValue), 0), 3, `state "a": bad key count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStorage(t)
			f := writeRaw(t, s, 1, "bad.keyed", tc.data)
			h := &checkpoint.KeyedStateHandle{File: f, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: tc.kg, Offset: 0, Length: int64(len(tc.data))}}}
			dir := commit(t, s, 1, checkpoint.Periodic, checkpoint.OperatorState{UID: "op", Parallelism: 1, MaxParallelism: maxP,
				Subtasks: []checkpoint.SubtaskStateEntry{{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "op", Keyed: h}}}})
			_, err := Inspect(context.Background(), dir)
			if !errors.Is(err, storage.ErrCorrupt) || errors.Is(err, ErrNotCheckpoint) {
				t.Fatalf("err %v, want one wrapping storage.ErrCorrupt only", err)
			}
			for _, sub := range []string{filepath.Join(dir, "bad.keyed"), "key group 3", tc.want} {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q lacks %q", err, sub)
				}
			}
		})
	}
}

func TestCorruptFiles(t *testing.T) {
	setup := func(t *testing.T) (string, string) {
		s := openStorage(t)
		h := writeKeyed(t, s, 2, "agg-1.keyed", keyedFixture(t))
		dir := commit(t, s, 2, checkpoint.Periodic, checkpoint.OperatorState{UID: "agg", Parallelism: 2, MaxParallelism: maxP,
			Subtasks: []checkpoint.SubtaskStateEntry{{Subtask: 1, State: checkpoint.OperatorSubtaskState{UID: "agg", Keyed: h}}}})
		return dir, filepath.Join(dir, "agg-1.keyed")
	}
	flip := func(t *testing.T, p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, keyed string)
		want   []string
	}{
		{"flipped keyed byte", func(t *testing.T, _, k string) { flip(t, k) }, []string{"chk-2/agg-1.keyed", "checksum mismatch"}},
		{"missing keyed file", func(t *testing.T, _, k string) { os.Remove(k) }, []string{"chk-2/agg-1.keyed", "missing"}},
		{"flipped metadata byte", func(t *testing.T, d, _ string) { flip(t, filepath.Join(d, "_metadata")) }, []string{"_metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, keyed := setup(t)
			if _, err := Inspect(context.Background(), dir); err != nil {
				t.Fatalf("undamaged: %v", err)
			}
			tc.damage(t, dir, keyed)
			_, err := Inspect(context.Background(), dir)
			if !errors.Is(err, storage.ErrCorrupt) || errors.Is(err, ErrNotCheckpoint) {
				t.Fatalf("err %v, want one wrapping storage.ErrCorrupt only", err)
			}
			for _, sub := range tc.want {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q lacks %q", err, sub)
				}
			}
		})
	}
}

func TestNotCheckpoint(t *testing.T) {
	s := openStorage(t)
	dir := commit(t, s, 4, checkpoint.Periodic)
	incomplete := filepath.Join(s.JobDir(), "chk-5")
	padded := filepath.Join(s.JobDir(), "chk-04")
	other := filepath.Join(dir, "notes.txt")
	for _, p := range []string{incomplete, padded} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{s.JobDir(), "not a chk-<n> directory"},
		{padded, "not a chk-<n> directory"},
		{incomplete, "never completed"},
		{other, "pass a chk-<n> directory or its _metadata file"},
		{filepath.Join(s.JobDir(), "chk-9"), "no such file or directory"},
	} {
		_, err := Inspect(context.Background(), tc.path)
		if !errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), tc.path+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrNotCheckpoint naming the path and saying %q", tc.path, err, tc.want)
		}
	}
	if r, err := Inspect(context.Background(), dir); err != nil || len(r.Operators) != 0 || r.Operators == nil {
		t.Errorf("checkpoint without operators: %+v, %v", r, err)
	}
}

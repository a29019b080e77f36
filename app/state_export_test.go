package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/testutil"
)

type exTotal struct {
	User       string
	Count, Sum int64
}

// exporting keeps, per key k0, k1, k2 (v mod 3) of the numbers 0..99: a
// total, counts of even and odd values, the values from 94 on, the last
// value seen (with a time to live) and one event-time timer at 1000+key.
type exporting struct {
	total  weir.ValueState[exTotal]
	parity weir.MapState[string, int64]
	tail   weir.ListState[int64]
	seen   weir.ValueState[int64]
}

func (f *exporting) Open(_ context.Context, kc *weir.KeyedContext[string]) (err error) {
	if f.total, err = weir.GetValueState[exTotal](kc, "total"); err != nil {
		return err
	}
	if f.parity, err = weir.GetMapState[string, int64](kc, "parity"); err != nil {
		return err
	}
	if f.tail, err = weir.GetListState[int64](kc, "tail"); err != nil {
		return err
	}
	f.seen, err = weir.GetValueState[int64](kc, "seen", weir.WithTTL(weir.StateTTL{TTL: time.Hour}))
	return err
}

func (f *exporting) ProcessElement(v int64, kc *weir.KeyedContext[string], _ *weir.Collector[int64]) error {
	t, _ := f.total.Value()
	f.total.Update(exTotal{User: kc.CurrentKey(), Count: t.Count + 1, Sum: t.Sum + v})
	p := "even"
	if v%2 == 1 {
		p = "odd"
	}
	n, _ := f.parity.Get(p)
	f.parity.Put(p, n+1)
	if v >= 94 {
		f.tail.Add(v)
	}
	f.seen.Update(v)
	kc.RegisterEventTimeTimer(1000 + v%3)
	return nil
}

func (f *exporting) OnTimer(int64, *weir.KeyedContext[string], *weir.Collector[int64]) error {
	return nil
}

// savepointForExport runs the job over 0..99 and stops it with a
// savepoint.
func savepointForExport(t *testing.T) string {
	t.Helper()
	var n atomic.Int64
	cfg := weir.NewConfig()
	if err := cfg.Set("state.checkpoints.dir", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	src := weir.FromSource(env, func() weir.Source[int64] { return &numbers{n: 100, emitted: &n} }).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(src, func(v int64) string { return fmt.Sprintf("k%d", v%3) })
	out := weir.Process(keyed, func() weir.KeyedProcessFunction[string, int64, int64] { return &exporting{} }).UID("stats").Parallelism(2)
	weir.SinkTo(out, func() weir.Sink[int64] { return discard{} })
	job, err := env.Start(t.Context(), "export")
	if err != nil {
		t.Fatal(err)
	}
	for n.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	// The savepoint's barrier follows every record emitted before it.
	sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestStateExport(t *testing.T) {
	sp := savepointForExport(t)
	export := func(args ...string) (int, string, string) {
		p, stdout, stderr := testProgram(nil)
		code := p.Run(context.Background(), append([]string{"state", "export", "--from", sp}, args...))
		return code, stdout.String(), stderr.String()
	}
	kg := func(k string) int { return keygroup.Of(keygroup.String(k), 128) }
	// The expected lines per key, in key order within a key group: the
	// keys' order in the file is by key group, then encoded key.
	perKey := map[string][]string{}
	for r := range 3 {
		k := fmt.Sprintf("k%d", r)
		var count, sum, even, odd, last int64
		var tail []string
		for v := int64(r); v < 100; v += 3 {
			count++
			sum += v
			if v%2 == 0 {
				even++
			} else {
				odd++
			}
			if v >= 94 {
				tail = append(tail, fmt.Sprint(v))
			}
			last = v
		}
		head := fmt.Sprintf(`{"operator":"stats","state":%%q,"kind":%%q,"keyGroup":%d,"key":%q`, kg(k), k)
		line := func(name, kind, rest string) string { return fmt.Sprintf(head, name, kind) + rest + "}" }
		perKey[k] = []string{
			// User keys by their encoding, length first: "odd" < "even".
			line("parity", "map", fmt.Sprintf(`,"userKey":"odd","value":%d`, odd)),
			line("parity", "map", fmt.Sprintf(`,"userKey":"even","value":%d`, even)),
			line("seen", "value", fmt.Sprintf(`,"value":%d,"ttlTimestamp":T`, last)),
			line("tail", "list", `,"value":[`+strings.Join(tail, ",")+`]`),
			line("total", "value", fmt.Sprintf(`,"value":{"User":%q,"Count":%d,"Sum":%d}`, k, count, sum)),
			fmt.Sprintf(`{"operator":"stats","kind":"event-timer","keyGroup":%d,"key":%q,"timestamp":%d}`, kg(k), k, 1000+r),
		}
	}
	keys := []string{"k0", "k1", "k2"}
	slices.SortStableFunc(keys, func(a, b string) int { return kg(a) - kg(b) })
	ttl := regexp.MustCompile(`"ttlTimestamp":(\d+)`)
	normalize := func(t *testing.T, out string) []string {
		t.Helper()
		start := time.Now().Add(-time.Minute).UnixMilli()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for i, l := range lines {
			if m := ttl.FindStringSubmatch(l); m != nil {
				var ts int64
				fmt.Sscan(m[1], &ts)
				if ts < start || ts > time.Now().UnixMilli() {
					t.Errorf("ttlTimestamp %d is not a time of this test", ts)
				}
				lines[i] = ttl.ReplaceAllString(l, `"ttlTimestamp":T`)
			}
		}
		return lines
	}

	t.Run("all", func(t *testing.T) {
		code, out, errOut := export()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// Operators in the metadata's order; keyed state subtask by
		// subtask, key group by key group, states by name and timers
		// last; then operator list state.
		var want []string
		for _, k := range keys {
			want = append(want, perKey[k]...)
		}
		want = append([]string{`{"operator":"numbers","state":"pos","kind":"operator-list","subtask":0,"value":100}`}, want...)
		for sub := range 2 { // the event-time clock of each keyed subtask: no watermark yet
			want = append(want, fmt.Sprintf(`{"operator":"stats","state":"union/weir.event-time","kind":"operator-list","subtask":%d,"value":-9223372036854775808}`, sub))
		}
		got := normalize(t, out)
		if !slices.Equal(got, want) {
			t.Errorf("export:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("select", func(t *testing.T) {
		code, out, errOut := export("--operator", "stats", "--state", "total")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var want []string
		for _, k := range keys {
			want = append(want, perKey[k][4])
		}
		if got := normalize(t, out); !slices.Equal(got, want) {
			t.Errorf("export:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("out", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "state.jsonl")
		code, out, errOut := export("--state", "pos", "--out", file)
		if code != 0 || out != "" || !strings.Contains(errOut, "exported 1 entries") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		b, err := os.ReadFile(file)
		if err != nil || string(b) != `{"operator":"numbers","state":"pos","kind":"operator-list","subtask":0,"value":100}`+"\n" {
			t.Fatalf("%s: %q, %v", file, b, err)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown-operator", []string{"--operator", "nope"}, 2, `--operator "nope": no operator of that uid holds state`},
		{"unknown-state", []string{"--state", "nope"}, 2, `--state "nope": no such state`},
		{"state-of-other-operator", []string{"--operator", "numbers", "--state", "total"}, 2, "the states are: pos (operator numbers, operator-list)"},
		{"argument", []string{"extra"}, 2, "takes no arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := export(c.args...)
			if code != c.code || !strings.Contains(errOut, c.says) {
				t.Fatalf("exit %d, want %d saying %q\nstdout:\n%s\nstderr:\n%s", code, c.code, c.says, out, errOut)
			}
		})
	}
	t.Run("no-from", func(t *testing.T) {
		p, _, stderr := testProgram(nil)
		if code := p.Run(context.Background(), []string{"state", "export"}); code != 2 || !strings.Contains(stderr.String(), "--from is required") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("missing-path", func(t *testing.T) {
		p, _, stderr := testProgram(nil)
		missing := filepath.Join(t.TempDir(), "savepoint-nope")
		if code := p.Run(context.Background(), []string{"state", "export", "--from", missing}); code != 2 || !strings.Contains(stderr.String(), missing) || !strings.Contains(stderr.String(), "pass a chk-N folder") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("no-schemas", func(t *testing.T) {
		// The same savepoint as a weir before schemas wrote it: no state
		// table, metadata v1.
		var meta string
		filepath.WalkDir(sp, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "_metadata" {
				meta = path
			}
			return err
		})
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		md, err := storage.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		old := t.TempDir()
		if err := os.CopyFS(old, os.DirFS(sp)); err != nil {
			t.Fatal(err)
		}
		for i := range md.Operators {
			md.Operators[i].States = nil
		}
		if b, err = storage.Encode(md); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(sp, meta)
		if err := os.WriteFile(filepath.Join(old, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
		p, stdout, stderr := testProgram(nil)
		if code := p.Run(context.Background(), []string{"state", "export", "--from", old, "--operator", "stats", "--state", "total"}); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr.String(), `warning: operator stats: the checkpoint was written before state schemas were recorded`) {
			t.Errorf("no warning: %s", stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d lines, want one per key group:\n%s", len(lines), stdout)
		}
		for i, k := range keys {
			prefix := fmt.Sprintf(`{"operator":"stats","state":"total","kind":"value","keyGroup":%d,"schema":"unknown","entries":1,"payloadBase64":"`, kg(k))
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("line %d: %s\nwant prefix %s", i, lines[i], prefix)
			}
		}
	})
	t.Run("not-a-checkpoint", func(t *testing.T) {
		p, _, stderr := testProgram(nil)
		if code := p.Run(context.Background(), []string{"state", "export", "--from", t.TempDir()}); code != 1 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

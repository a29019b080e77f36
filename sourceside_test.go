package weir_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
)

// sideSource emits 0..n-1 with its position in operator state, sending
// every ninth number (4, 13, …) to the side output tag as a line
// instead of to its main output.
type sideSource struct {
	n       int64
	tag     weir.OutputTag[string]
	require bool // refuse to open unless the job reads tag
	rc      *weir.RuntimeContext
	pos     *weir.OperatorList[int64]
	next    int64
}

func (s *sideSource) Open(_ context.Context, rc *weir.RuntimeContext) error {
	if s.require && !weir.SideOutputConnected(rc, s.tag) {
		return weir.Unrecoverable(fmt.Errorf("side output %q is not read", s.tag.ID()))
	}
	s.rc = rc
	var err error
	if s.pos, err = weir.GetOperatorListState[int64](rc, "pos"); err != nil {
		return err
	}
	if p := s.pos.Get(); len(p) == 1 {
		s.next = p[0]
	}
	return nil
}

func (s *sideSource) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	for ; s.next < s.n && max > 0; max-- {
		if s.next%9 == 4 {
			weir.CollectSourceSide(s.rc, s.tag, fmt.Sprintf("side-%d", s.next))
		} else {
			dst = append(dst, s.next)
		}
		s.next++
	}
	if s.next < s.n {
		return dst, nil
	}
	return dst, io.EOF
}

func (s *sideSource) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *sideSource) Close(context.Context) error { return nil }

// A source's side output is exact like its main output: with failures
// injected at every fault point, the main sink holds every number not
// sent to the side and the side sink every other, each once — with and
// without watermarks generated in the source. A source can tell whether
// the job reads its side output.
func TestSourceSideOutput(t *testing.T) {
	const n = 20_000
	tag := weir.NewOutputTag[string]("side")
	var wantMain, wantSide []string
	for i := range int64(n) {
		if i%9 == 4 {
			wantSide = append(wantSide, fmt.Sprintf("side-%d", i))
		} else {
			wantMain = append(wantMain, fmt.Sprint(i))
		}
	}
	for _, timed := range []bool{false, true} {
		t.Run(fmt.Sprintf("watermarks=%v", timed), func(t *testing.T) {
			env, log := newEnv(testConfig(t, 1, "5ms"))
			inj := injector(env, 3, 11, n, faults.AllPoints()...)
			newSource := func() weir.Source[int64] { return &sideSource{n: n, tag: tag, require: true} }
			var src weir.Stream[int64]
			if timed {
				ws := weir.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ int64) int64 { return v })
				src = weir.FromSourceWithWatermarks(env, newSource, ws).UID("src")
			} else {
				src = weir.FromSource(env, newSource).UID("src")
			}
			mainDir := sinkLines(t, weir.Map(src, func(v int64) string { return fmt.Sprint(v) }))
			sideDir := t.TempDir()
			weir.SinkToTransactional(weir.SideOutput(src, tag), file.ExactlyOnce(sideDir, func(v string, dst []byte) []byte { return append(dst, v...) })).UID("side")
			execute(t, env, log)
			if inj.Fired() != 3 {
				t.Errorf("%d of 3 failures fired: %v", inj.Fired(), inj.Log())
			}
			sameMultiset(t, wantMain, committed(t, mainDir))
			sameMultiset(t, wantSide, committed(t, sideDir))
		})
	}
	t.Run("unread", func(t *testing.T) {
		env, log := newEnv(testConfig(t, 1, "5ms"))
		src := weir.FromSource(env, func() weir.Source[int64] { return &sideSource{n: n, tag: tag, require: true} }).UID("src")
		sinkLines(t, weir.Map(src, func(v int64) string { return fmt.Sprint(v) }))
		err := env.Execute(context.Background(), "test")
		if err == nil || !strings.Contains(err.Error(), `side output "side" is not read`) {
			t.Fatalf("Execute = %v, want the source's refusal\n%s", err, log)
		}
	})
}

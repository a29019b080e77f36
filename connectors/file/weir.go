package file

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir"
)

// ExactlyOnce returns a factory of exactly-once file sinks for
// weir.SinkToTransactional: each record becomes one line (format appends it
// to dst, without the newline) in part files under dir. A part file is one
// transaction: written hidden, pre-committed (synced) at a checkpoint
// barrier, and made visible by an atomic rename once the checkpoint
// completes. format is called per record and should not allocate.
//
// A job that starts from scratch (restores no checkpoint) refuses to
// start into a dir that holds committed output of this sink from an
// earlier run, which it would otherwise commit a second time: remove it,
// choose another dir, or resume that run from a checkpoint or savepoint.
func ExactlyOnce[T any](dir string, format func(v T, dst []byte) []byte) func() weir.TwoPhaseCommitSink[T, Txn] {
	return func() weir.TwoPhaseCommitSink[T, Txn] { return &txSink[T]{dir: dir, format: format} }
}

type txSink[T any] struct {
	dir    string
	format func(T, []byte) []byte
	s      *Sink
	buf    []byte
	ends   []int
	lines  [][]byte
}

func (t *txSink[T]) Open(ctx context.Context, rc *weir.RuntimeContext, restored []Txn) error {
	s, err := NewSink(t.dir, rc.UID(), rc.Subtask())
	if err != nil {
		return err
	}
	if !rc.Restored() {
		// Only an earlier run's output is refused: see refuseEarlierOutput
		// for why each subtask checks its own files (and, on the job's
		// first execution, those of subtasks this run does not have). A
		// later attempt without state in WEAKLY_CONSISTENT mode finds its
		// own output from before only if its snapshots are gone (a
		// whole-job restart found none that verifies, or a finished job's
		// discard was cut short); in the other modes nothing commits
		// before the first completed checkpoint, which a later attempt
		// would restore.
		if err := refuseEarlierOutput(t.dir, rc.UID(), rc.Subtask(), rc.Parallelism(), rc.Attempt() == 0); err != nil {
			return weir.Unrecoverable(err) // no restart would change the folder
		}
	}
	t.s = s
	return s.Open(restored)
}

func (t *txSink[T]) Begin(ctx context.Context) (Txn, error) { return t.s.Begin() }

// Write formats the batch into one reused buffer, then hands the lines to
// the transaction. Line slices are cut only after the buffer stopped
// growing, so none points into a stale backing array.
func (t *txSink[T]) Write(_ context.Context, txn Txn, batch []T) error {
	t.buf, t.ends, t.lines = t.buf[:0], t.ends[:0], t.lines[:0]
	for _, v := range batch {
		t.buf = t.format(v, t.buf)
		t.ends = append(t.ends, len(t.buf))
	}
	start := 0
	for _, end := range t.ends {
		t.lines = append(t.lines, t.buf[start:end:end])
		start = end
	}
	return t.s.Write(txn, t.lines)
}

func (t *txSink[T]) PreCommit(ctx context.Context, txn Txn) error { return t.s.PreCommit(txn) }
func (t *txSink[T]) Commit(ctx context.Context, txn Txn) error    { return t.s.Commit(txn) }
func (t *txSink[T]) Abort(ctx context.Context, txn Txn) error     { return t.s.Abort(txn) }

func (t *txSink[T]) Close(context.Context) error {
	if t.s == nil {
		return nil
	}
	return t.s.Close()
}

// Lines returns a factory of replayable sources for weir.FromSource that
// emit the lines of the files matching pattern (without the newline).
// Subtask s of p reads the files s, s+p, s+2p, … of the sorted match list;
// its position (file path, byte offset) is checkpointed, so a restore
// resumes at the first line after the checkpoint. The parallelism must not
// change between a checkpoint and its restore, the file being read must
// still match, and files added since that sort before it are not read.
func Lines(pattern string) func() weir.Source[string] {
	return func() weir.Source[string] { return &lineSource{pattern: pattern} }
}

// sourcePosition is a line source subtask's checkpointed progress: the
// path of the file being read (the glob is expanded again on restore, and a
// file index would silently point elsewhere if files were added or
// removed) and the byte offset in it. Which files a subtask reads depends
// on the parallelism, so it is kept too. An empty Path means all files done.
type sourcePosition struct {
	Parallelism int64
	Path        string
	Offset      int64
}

type lineSource struct {
	pattern string
	files   []string // this subtask's files
	r       *LineReader
	pos     Position
	par     int
	state   *weir.OperatorList[sourcePosition]
	lines   [][]byte
}

// DeclareStates lists the source's one state, its position per file, so
// that a restore checks it before the job runs.
func (l *lineSource) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{weir.OperatorListStateOf[sourcePosition](filePositionState)}
}

const filePositionState = "file-position"

func (l *lineSource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	all, err := ExpandGlob(l.pattern)
	if err != nil {
		return err
	}
	var mine []string
	for i := rc.Subtask(); i < len(all); i += rc.Parallelism() {
		mine = append(mine, all[i])
	}
	st, err := weir.GetOperatorListState[sourcePosition](rc, filePositionState)
	if err != nil {
		return err
	}
	l.state = st
	l.par = rc.Parallelism()
	restored := st.Get()
	l.files = mine
	switch {
	case len(restored) == 1 && restored[0].Parallelism == int64(l.par):
		pos, err := l.resolve(restored[0])
		if err != nil {
			return weir.Unrecoverable(fmt.Errorf("file source %q subtask %d: %w", rc.UID(), rc.Subtask(), err))
		}
		l.pos = pos
	case len(restored) > 0 || rc.Restored():
		return weir.Unrecoverable(fmt.Errorf("file source %q: the checkpoint holds %d position(s) for subtask %d taken at another parallelism than %d: the file source cannot change its parallelism on restore; run it with the parallelism of the checkpoint", rc.UID(), len(restored), rc.Subtask(), l.par))
	}
	l.r, err = NewLineReader(mine, l.pos)
	return err
}

// resolve finds a checkpointed file among this subtask's files.
func (l *lineSource) resolve(sp sourcePosition) (Position, error) {
	if sp.Path == "" {
		return Position{File: len(l.files)}, nil
	}
	for i, f := range l.files {
		if f == sp.Path {
			return Position{File: i, Offset: sp.Offset}, nil
		}
	}
	return Position{}, fmt.Errorf("the checkpoint was reading %s at byte %d, which %q no longer matches for this subtask (files were removed or renamed since): restore with the same input files", sp.Path, sp.Offset, l.pattern)
}

func (l *lineSource) Read(ctx context.Context, dst []string, max int) ([]string, error) {
	lines, pos, err := l.r.Next(max, l.lines[:0])
	l.lines = lines
	for _, b := range lines {
		dst = append(dst, string(b))
	}
	if len(lines) > 0 {
		l.pos = pos
	}
	if errors.Is(err, io.EOF) {
		return dst, io.EOF
	}
	return dst, err
}

func (l *lineSource) SnapshotState(int64) error {
	sp := sourcePosition{Parallelism: int64(l.par), Offset: l.pos.Offset}
	if l.pos.File < len(l.files) {
		sp.Path = l.files[l.pos.File]
	}
	l.state.Update([]sourcePosition{sp})
	return nil
}

func (l *lineSource) Close(context.Context) error {
	if l.r == nil {
		return nil
	}
	return l.r.Close()
}

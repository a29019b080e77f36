// Package print is an at-least-once sink that writes records as lines to a
// writer (standard output by default), prefixed by the subtask index when
// the parallelism is above one, as Flink's print sink.
//
// Owns: the print sink. Must not touch: the runtime (it is a weir.Sink like
// any user's).
package print

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/weirstream/weir"
)

// Sink prints records.
type Sink[T any] struct {
	mu     *sync.Mutex // subtasks share the writer
	w      io.Writer
	bw     *bufio.Writer
	prefix string
}

// New returns a factory of sinks printing to w (nil: standard output), for
// weir.SinkTo. Lines of different subtasks never interleave mid-line.
func New[T any](w io.Writer) func() weir.Sink[T] {
	if w == nil {
		w = os.Stdout
	}
	mu := &sync.Mutex{}
	return func() weir.Sink[T] { return &Sink[T]{mu: mu, w: w} }
}

// Open sets the line prefix.
func (s *Sink[T]) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	if rc.Parallelism() > 1 {
		s.prefix = fmt.Sprintf("%d> ", rc.Subtask()+1)
	}
	s.bw = bufio.NewWriter(lockedWriter{s.mu, s.w})
	return nil
}

// Write prints a batch.
func (s *Sink[T]) Write(ctx context.Context, batch []T) error {
	for _, v := range batch {
		if _, err := fmt.Fprintf(s.bw, "%s%v\n", s.prefix, v); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes buffered lines out.
func (s *Sink[T]) Flush(context.Context) error { return s.bw.Flush() }

// Close flushes.
func (s *Sink[T]) Close(context.Context) error { return s.bw.Flush() }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

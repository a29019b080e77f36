package weir

import (
	"context"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/dataflow"
)

// OutputTag names a side output of records of type T: a second stream an
// operator emits beside its main one (Flink's OutputTag). Functions of
// Process and FlatMap emit into it with CollectSide; windows send late
// records to one (WindowedStream.SideOutputLateData). Read it with
// SideOutput.
type OutputTag[T any] struct {
	id string
}

// NewOutputTag returns the tag id for side outputs of type T. The id
// names the side output in the job graph; one operator's tags must have
// distinct ids.
func NewOutputTag[T any](id string) OutputTag[T] { return OutputTag[T]{id: id} }

// ID is the tag's id.
func (t OutputTag[T]) ID() string { return t.id }

// SideOutput is the stream of records s's operator emits into tag. The
// operator must have side outputs (a source, Process, FlatMap, a window); records
// emitted into a tag nobody reads are dropped, as in Flink.
func SideOutput[T, U any](s Stream[U], tag OutputTag[T]) Stream[T] {
	env := s.env
	if tag.id == "" {
		env.fail(fmt.Errorf("side output of %q: the OutputTag has no id: make it with weir.NewOutputTag", s.node.Name))
	} else if !s.node.SideOutputs {
		env.fail(fmt.Errorf("side output %q of %q: the operator has no side outputs: they come from sources, Process, FlatMap and windows", tag.id, s.node.Name))
	} else if prev, ok := env.sideTypes[sideKey{s.node.ID, tag.id}]; ok && prev != reflect.TypeFor[T]() {
		env.fail(fmt.Errorf("side output %q of %q: read as %s and as %s: one tag id, one type", tag.id, s.node.Name, prev, reflect.TypeFor[T]()))
	}
	if env.sideTypes == nil {
		env.sideTypes = map[sideKey]reflect.Type{}
	}
	env.sideTypes[sideKey{s.node.ID, tag.id}] = reflect.TypeFor[T]()
	side := &dataflow.OutputFactories{}
	outputFactories[T](side)
	side.Timed = s.node.Timed
	combine := side.Combine
	side.Combine = func(outs []any) (any, error) {
		out, err := combine(outs)
		if err != nil {
			return nil, err
		}
		return &sideCollector[T]{out: out.(dataflow.Output[T])}, nil
	}
	edges := []dataflow.Edge{{From: s.node.ID, Partition: dataflow.Forward, Tag: tag.id, Side: side}}
	n := newNode[T](env, "SideOutput", edges, func(int) dataflow.Operator { return &mapOp[T, T]{f: identity[T]} })
	n.Name = "SideOutput(" + tag.id + ")"
	n.Timed = side.Timed
	n.Parallelism = s.node.Parallelism
	inputFactory[T](n)
	return Stream[T]{env: env, node: n}
}

// CollectSide emits v into the side output tag of the operator whose
// function got out, with the timestamp the main output's records get.
// If the operator's tag has no reader, v is dropped.
func CollectSide[T, U any](out *Collector[U], tag OutputTag[T], v T) {
	sc, ok := out.sides.get(tag.id).(*sideCollector[T])
	if !ok {
		return
	}
	sc.buf = append(sc.buf, v)
	if out.timed {
		sc.ts = append(sc.ts, out.cur)
	}
	sc.timed = sc.timed || out.timed
}

// sideCollector buffers the records of one side output of an operator
// between its flushes.
type sideCollector[T any] struct {
	out   dataflow.Output[T]
	buf   []T
	ts    []int64
	timed bool
}

func (c *sideCollector[T]) flush(ctx context.Context) error {
	if len(c.buf) == 0 {
		return nil
	}
	var ts []int64
	if c.timed && len(c.ts) == len(c.buf) {
		ts = c.ts
	}
	err := c.out.Push(ctx, c.buf, ts)
	clear(c.buf)
	c.buf, c.ts, c.timed = c.buf[:0], c.ts[:0], false
	return err
}

// sideFlusher is a sideCollector of any type.
type sideFlusher interface {
	flush(ctx context.Context) error
}

// sideOutputs are an operator's side outputs by tag id, as the runtime
// connected them (dataflow.SideOutputSetter). The zero value has none.
type sideOutputs struct {
	byTag map[string]sideFlusher
	order []sideFlusher
}

func (s *sideOutputs) SetSideOutput(tag string, out any) error {
	f, ok := out.(sideFlusher)
	if !ok {
		return fmt.Errorf("side output %q: %T is not a side output collector", tag, out)
	}
	if s.byTag == nil {
		s.byTag = map[string]sideFlusher{}
	}
	s.byTag[tag] = f
	s.order = append(s.order, f)
	return nil
}

// get returns the collector of tag, nil without one.
func (s *sideOutputs) get(tag string) sideFlusher {
	if s == nil {
		return nil
	}
	return s.byTag[tag]
}

// flushSides pushes what every side output collected.
func (s *sideOutputs) flushSides(ctx context.Context) error {
	for _, f := range s.order {
		if err := f.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

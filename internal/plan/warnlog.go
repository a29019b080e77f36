package plan

import (
	"context"
	"log/slog"
)

// warnHandler is the logger of a job whose program set none: a library
// may stay quiet while a job goes well, never while it fails. It passes
// warnings and errors (a task failure, a restart, a checkpoint declined,
// data loss) to slog.Default() as it is when each record is logged, so a
// program that sets its default logger after NewEnv is honoured, and
// drops everything below Warn.
type warnHandler struct {
	ops []handlerOp // WithAttrs and WithGroup calls, replayed on the default handler
}

// handlerOp is one WithAttrs (attrs) or WithGroup (group) call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

func (h warnHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && slog.Default().Handler().Enabled(ctx, l)
}

func (h warnHandler) Handle(ctx context.Context, r slog.Record) error {
	d := slog.Default().Handler()
	for _, op := range h.ops {
		if op.attrs != nil {
			d = d.WithAttrs(op.attrs)
		} else {
			d = d.WithGroup(op.group)
		}
	}
	return d.Handle(ctx, r)
}

func (h warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return warnHandler{ops: append(h.ops[:len(h.ops):len(h.ops)], handlerOp{attrs: attrs})}
}

func (h warnHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return warnHandler{ops: append(h.ops[:len(h.ops):len(h.ops)], handlerOp{group: name})}
}

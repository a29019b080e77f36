package logagg

import (
	"fmt"
	"log/slog"
)

// key appends the group key of r, as seen by h, to b: level, message,
// the handler's attributes, the record's attributes (Handler doc).
func (h *Handler) key(b []byte, r slog.Record) []byte {
	b = append(b, r.Level.String()...)
	b = append(b, 0)
	b = appendNorm(b, r.Message)
	b = append(b, 0)
	b = append(b, h.prefix...)
	r.Attrs(func(a slog.Attr) bool {
		b = h.c.appendAttr(b, h.group, a)
		return true
	})
	return b
}

// appendAttr appends a's part of a key: "qualified-key=value\x00", or
// nothing for an attribute that never splits a group.
func (c *core) appendAttr(b []byte, qual string, a slog.Attr) []byte {
	if _, ok := c.ignore[a.Key]; ok {
		return b
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindDuration, slog.KindTime:
		return b
	case slog.KindGroup:
		q := qual
		if a.Key != "" {
			q = qual + a.Key + "."
		}
		for _, ga := range v.Group() {
			b = c.appendAttr(b, q, ga)
		}
		return b
	}
	b = append(b, qual...)
	b = append(b, a.Key...)
	b = append(b, '=')
	switch v.Kind() {
	case slog.KindString:
		b = appendNorm(b, v.String())
	case slog.KindBool:
		if v.Bool() {
			b = append(b, 't')
		} else {
			b = append(b, 'f')
		}
	default:
		switch x := v.Any().(type) {
		case error:
			b = appendNorm(b, x.Error())
		case fmt.Stringer:
			b = appendNorm(b, x.String())
		default:
			b = appendNorm(b, fmt.Sprint(x))
		}
	}
	return append(b, 0)
}

// appendNorm appends s with every run of decimal digits as one '0'. It
// copies the spans between runs whole: keys are built for every warning.
func appendNorm(b []byte, s string) []byte {
	for len(s) > 0 {
		i := 0
		for i < len(s) && (s[i] < '0' || s[i] > '9') {
			i++
		}
		b = append(b, s[:i]...)
		if i == len(s) {
			break
		}
		b = append(b, '0')
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		s = s[i:]
	}
	return b
}

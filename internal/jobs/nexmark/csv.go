package nexmark

import "strings"

// AppendString appends s as an RFC 4180 CSV field: quoted (with quotes
// doubled) only when it holds a comma, a quote or a line break.
func AppendString(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}

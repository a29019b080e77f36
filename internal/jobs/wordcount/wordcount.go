// Package wordcount is weir's built-in word count: lines from files, split
// into words, counted per word; every occurrence emits the line
// "word,count" with the word's running count (so the last line of a word
// holds its total), exactly once into files.
//
// A line that is not valid UTF-8 is malformed: it is counted, logged (the
// first few, with file content) and written to the dead-letter output
// instead of being counted as words, so nothing is silently dropped.
//
// Owns: the word-count job. Must not touch: engine internals; it is built
// with the public API.
package wordcount

import (
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
)

// Options are the job's parameters.
type Options struct {
	Input      string // glob
	Out        string // committed counts
	DeadLetter string // committed malformed lines
	// Malformed counts malformed lines as they are processed (replays
	// after a restore included).
	Malformed *atomic.Int64
	// Logger receives the first malformed lines (nil: not logged).
	Logger *slog.Logger
}

// logMalformed is how many malformed lines are logged in full.
const logMalformed = 10

// Count is a word's running count.
type Count struct {
	Word  string
	Count int64
}

// AppendLine appends "word,count".
func (c Count) AppendLine(dst []byte) []byte {
	dst = append(dst, c.Word...)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, c.Count, 10)
}

// token is a word, or a malformed line routed to the dead letters.
type token struct {
	Word      string
	Malformed bool
}

// Build adds the job to env.
func Build(env *weir.Env, o Options) {
	lines := weir.FromSource(env, file.Lines(o.Input)).Name("lines").UID("lines")
	tokens := weir.FlatMap(lines, func(l string, out *weir.Collector[token]) error {
		if !utf8.ValidString(l) {
			var n int64 = 1
			if o.Malformed != nil {
				n = o.Malformed.Add(1)
			}
			if o.Logger != nil && n <= logMalformed {
				o.Logger.Warn("malformed input line (not UTF-8): sent to the dead letters", "line", strconv.Quote(l), "malformed_so_far", n)
			}
			out.Collect(token{Word: l, Malformed: true})
			return nil
		}
		for _, w := range strings.FieldsFunc(l, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\'' }) {
			out.Collect(token{Word: strings.ToLower(w)})
		}
		return nil
	}).Name("split").UID("split")
	bad := weir.Filter(tokens, func(t token) bool { return t.Malformed }).Name("malformed").UID("malformed")
	weir.SinkToTransactional(bad, file.ExactlyOnce(o.DeadLetter, func(t token, dst []byte) []byte {
		return append(dst, strconv.Quote(t.Word)...)
	})).Name("dead-letters").UID("dead-letters")
	words := weir.Filter(tokens, func(t token) bool { return !t.Malformed }).Name("words").UID("words")
	counts := weir.Reduce(
		weir.KeyBy(weir.Map(words, func(t token) Count { return Count{Word: t.Word, Count: 1} }).Name("ones").UID("ones"),
			func(c Count) string { return c.Word }),
		func(acc, c Count) Count { acc.Count += c.Count; return acc }).Name("count").UID("count")
	weir.SinkToTransactional(counts, file.ExactlyOnce(o.Out, Count.AppendLine)).Name("counts").UID("counts")
}

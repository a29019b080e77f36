package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/jobs/wordcount"
)

const wordcountLong = `wordcount reads the lines of the files matching --input, splits them into
words (letters, digits and apostrophes, lower-cased) and writes "word,count" with the
running count for every occurrence into an exactly-once file sink in --out.
Lines that are not valid UTF-8 are counted, logged and written to
<out>/malformed instead.`

// wordcountFlags are wordcount's flags: one value per command line or
// build.
type wordcountFlags struct {
	jf        jobFlags
	input     string
	out       string
	malformed atomic.Int64
}

// wordcountJob is `weir run wordcount`.
func wordcountJob() app.Job {
	return app.Job{
		Name:  "wordcount",
		Short: "Count words in files, exactly once into files",
		Long:  wordcountLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			w := &wordcountFlags{}
			fs.StringVar(&w.input, "input", "", "files to read (glob)")
			fs.StringVar(&w.out, "out", "", "folder for the committed counts")
			w.jf.register(fs, "1s")
			app.MarkPath(fs, "input")
			app.MarkPath(fs, "out")
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error { return w.configure(fs, cfg) },
				Build:     w.build,
				Summary:   w.jf.faultSummary,
				Finish:    w.finish,
			}
		},
	}
}

func (w *wordcountFlags) dead() string { return filepath.Join(w.out, "malformed") }

func (w *wordcountFlags) configure(fs *pflag.FlagSet, cfg *weir.Config) error {
	if w.input == "" {
		return usagef("--input is required (a file or glob, e.g. 'logs/*.txt')")
	}
	if _, err := file.ExpandGlob(w.input); err != nil {
		return usagef("--input: %v", err)
	}
	if err := w.jf.configure(fs, cfg); err != nil {
		return err
	}
	if err := w.jf.quickRestarts(cfg); err != nil {
		return err
	}
	if w.out == "" {
		return usagef("--out is required")
	}
	for _, d := range []string{w.out, w.dead()} {
		if err := checkWritableDir("--out", d); err != nil {
			return err
		}
	}
	return nil
}

func (w *wordcountFlags) build(env *weir.Env) error {
	span := int64(0)
	if w.jf.injectFailures > 0 {
		// Failures are spread over the input's lines.
		files, err := file.ExpandGlob(w.input)
		if err != nil {
			return usagef("--input: %v", err)
		}
		if span, err = countInputLines(files); err != nil {
			return err
		}
	}
	w.jf.apply(env, span)
	wordcount.Build(env, wordcount.Options{Input: w.input, Out: w.out, DeadLetter: w.dead(), Malformed: &w.malformed, Logger: w.jf.logger()})
	return nil
}

func (w *wordcountFlags) finish(context.Context, app.Outcome) error {
	bad, err := file.ReadCommitted(w.dead())
	if err != nil {
		return err
	}
	lines, err := file.ReadCommitted(w.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "committed %d count lines in %s; %d malformed lines in %s (%d seen, replays included)\n", len(lines), w.out, len(bad), w.dead(), w.malformed.Load())
	return nil
}

package main

import (
	stdbytes "bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/jobs/wordcount"
)

// countInputLines counts the lines of files (the fault injector's span).
func countInputLines(files []string) (int64, error) {
	var n int64
	buf := make([]byte, 64<<10)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, err
		}
		for {
			k, err := f.Read(buf)
			n += int64(stdbytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return 0, err
			}
		}
		f.Close()
	}
	return n, nil
}

func newWordcountCmd() *cobra.Command {
	var (
		jf    jobFlags
		input string
		out   string
	)
	c := &cobra.Command{
		Use:   "wordcount",
		Short: "Count words in files, exactly once into files",
		Long: `wordcount reads the lines of the files matching --input, splits them into
words (letters, digits and apostrophes, lower-cased) and writes "word,count" with the
running count for every occurrence into an exactly-once file sink in --out.
Lines that are not valid UTF-8 are counted, logged and written to
<out>/malformed instead.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if input == "" {
				return usagef("--input is required (a file or glob, e.g. 'logs/*.txt')")
			}
			files, err := file.ExpandGlob(input)
			if err != nil {
				return usagef("--input: %v", err)
			}
			cfg, err := jf.configure(c)
			if err != nil {
				return err
			}
			if err := jf.quickRestarts(cfg); err != nil {
				return err
			}
			if out == "" {
				return usagef("--out is required")
			}
			dead := filepath.Join(out, "malformed")
			for _, d := range []string{out, dead} {
				if err := checkWritableDir("--out", d); err != nil {
					return err
				}
			}
			env := weir.NewEnv(cfg)
			span := int64(0)
			if jf.injectFailures > 0 {
				// Failures are spread over the input's lines.
				if span, err = countInputLines(files); err != nil {
					return err
				}
			}
			jf.apply(env, span)
			var malformed atomic.Int64
			wordcount.Build(env, wordcount.Options{Input: input, Out: out, DeadLetter: dead, Malformed: &malformed, Logger: jf.logger()})
			if err := jf.execute(env, "wordcount"); err != nil {
				return err
			}
			bad, err := file.ReadCommitted(dead)
			if err != nil {
				return err
			}
			lines, err := file.ReadCommitted(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "committed %d count lines in %s; %d malformed lines in %s (%d seen, replays included)\n", len(lines), out, len(bad), dead, malformed.Load())
			return nil
		},
	}
	c.Flags().StringVar(&input, "input", "", "files to read (glob)")
	c.Flags().StringVar(&out, "out", "", "folder for the committed counts")
	jf.register(c, "1s")
	return c
}

// Command weir runs weir's built-in jobs and tools.
//
//	weir run demo --events 2000000 --parallelism 2 --checkpoint-interval 100ms --out out/
//	weir run wordcount --input 'logs/*.txt' --out counts/
//	weir bench keyed-sum --records 10000000 --keys 1000 --parallelism 2 --json
//
// Exit codes: 0 success, 1 the job failed, 2 bad usage or configuration
// (reported before any work starts).
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// usageError marks errors in flags, configuration or paths: exit code 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "weir:", err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Command weir runs weir's built-in jobs, locally or on a cluster, the
// cluster's roles, and tools.
//
//	weir run demo --events 2000000 --parallelism 2 --checkpoint-interval 100ms --out out/
//	weir run wordcount --input 'logs/*.txt' --out counts/
//	weir jobmanager --state-dir /data/weir
//	weir taskmanager --jobmanager 127.0.0.1:6123 --slots 2
//	weir run demo --events 2000000 --jobmanager 127.0.0.1:6123
//	weir bench keyed-sum --records 10000000 --keys 1000 --parallelism 2 --json
//	weir bench shuffle --records 20000000 --json
//
// WEIR_CPUPROFILE=FILE makes any weir process write a CPU profile of its
// life to FILE (cpuprofile.go).
//
// The job, role and client commands come from the app package (the same
// tree a user program gets from app.Main); the built-in jobs are listed in
// root.go, the benchmarks are internal/bench.
//
// Exit codes: 0 success, 1 the job failed, 2 bad usage or configuration
// (reported before any work starts).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/weirstream/weir/app"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// usageError marks errors in flags, configuration or paths: exit code 2.
type usageError = app.UsageError

func usagef(format string, a ...any) error { return app.Usagef(format, a...) }

func run(args []string) int {
	stopProfile, err := startEnvCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		return 2
	}
	defer stopProfile()
	p := program()
	err = p.Execute(context.Background(), newRoot(p), args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
	}
	return app.ExitCode(err)
}

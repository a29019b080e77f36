package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file into which a weir process writes a CPU
// profile of its whole life, whatever its command: how bench shuffle
// --profile-dir profiles its TaskManager processes, and a way to profile
// any role without a flag of its own. The profile is written when the
// command returns (a role returns on SIGINT or SIGTERM), not on SIGKILL.
const cpuProfileEnv = "WEIR_CPUPROFILE"

// startEnvCPUProfile starts the profile cpuProfileEnv asks for, if any;
// stop writes it.
func startEnvCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s=%s: %w", cpuProfileEnv, path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

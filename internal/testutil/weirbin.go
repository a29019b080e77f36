package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildWeir builds the weir binary (cmd/weir) into a new temporary folder,
// for the TestMain of a package whose tests run it as a process. It
// returns the binary's path and the function that removes the folder.
func BuildWeir(prefix string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("temp dir: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "weir")
	build := exec.Command(goTool(), "build", "-o", bin, "github.com/weirstream/weir/cmd/weir")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build of the weir binary failed: %w", err)
	}
	return bin, cleanup, nil
}

// goTool finds the go command that runs the tests: GOROOT's, else the one
// on PATH, else the machine's default install.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

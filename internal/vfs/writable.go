package vfs

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// CheckWritableDir creates dir if needed and checks that this process may
// create files in it, without creating one: a probe file would be left
// in the user's folder (a sink's output, checkpoint storage) by a process
// killed between creating and removing it. The kernel answers (access(2)
// with write and search permission), which accounts for permission bits,
// ACLs and read-only mounts.
func CheckWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

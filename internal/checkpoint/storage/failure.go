package storage

import (
	"errors"
	"io/fs"
	"net"
	"syscall"

	"github.com/weirstream/weir/internal/vfs"
)

// IsStorageFailure reports whether err is checkpoint storage failing —
// the disk full or over quota, an I/O error, a read-only or forbidden
// folder, S3 unreachable or answering with a server error — rather than a
// fault of the task's own (a state it cannot encode, a checksum mismatch).
// The JobManager treats the two apart: no restart can fix storage, so a
// storage failure backs off instead of counting towards
// execution.checkpointing.tolerable-failed-checkpoints.
func IsStorageFailure(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EFBIG,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT,
		fs.ErrPermission, vfs.ErrInjected} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var sf interface{ StorageFailure() bool }
	return errors.As(err, &sf) && sf.StorageFailure()
}

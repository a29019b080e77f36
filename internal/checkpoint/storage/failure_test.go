package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/vfs"
)

type statusErr struct{ code int }

func (e statusErr) Error() string        { return fmt.Sprintf("status %d", e.code) }
func (e statusErr) StorageFailure() bool { return e.code >= 500 }

func TestIsStorageFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "write", Path: "/ck/chk-7/x", Err: syscall.ENOSPC}, true},
		{fmt.Errorf("snapshot: %w", &fs.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}), true},
		{&fs.PathError{Op: "sync", Path: "x", Err: syscall.EIO}, true},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, true},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, true},
		{fmt.Errorf("put: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{fmt.Errorf("put: %w", statusErr{503}), true},
		{fmt.Errorf("put: %w", statusErr{404}), false},
		{fmt.Errorf("write: %w", vfs.ErrInjected), true},
		{errors.New("encode state of operator sum: value too large"), false},
		{fmt.Errorf("restore: %w", ErrCorrupt), false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := IsStorageFailure(tc.err); got != tc.want {
			t.Errorf("IsStorageFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

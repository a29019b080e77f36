package vfs

import (
	"io/fs"
	"os"
)

// ErrorFS wraps an FS and fails the operations its Injector chooses.
type ErrorFS struct {
	fs  FS
	inj Injector
}

var _ FS = (*ErrorFS)(nil)

// WithErrors returns fsys with errors injected by inj.
func WithErrors(fsys FS, inj Injector) *ErrorFS {
	return &ErrorFS{fs: fsys, inj: inj}
}

// check asks the injector and dresses a failure as the OS would.
func (e *ErrorFS) check(op Op, path string) error {
	if err := e.inj.MaybeError(op, path); err != nil {
		return &fs.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

// Create implements FS.
func (e *ErrorFS) Create(name string) (File, error) {
	if err := e.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{f: f, e: e, name: name}, nil
}

// Open implements FS.
func (e *ErrorFS) Open(name string) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{f: f, e: e, name: name}, nil
}

// Stat implements FS.
func (e *ErrorFS) Stat(name string) (fs.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

// ReadDir implements FS.
func (e *ErrorFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := e.check(OpReadDir, name); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(name)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := e.check(OpMkdirAll, name); err != nil {
		return err
	}
	return e.fs.MkdirAll(name, perm)
}

// Rename implements FS; the injector sees the new name, which is the one a
// test usually means ("the rename to _metadata").
func (e *ErrorFS) Rename(oldname, newname string) error {
	if err := e.inj.MaybeError(OpRename, newname); err != nil {
		return &os.LinkError{Op: OpRename.String(), Old: oldname, New: newname, Err: err}
	}
	return e.fs.Rename(oldname, newname)
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

// RemoveAll implements FS.
func (e *ErrorFS) RemoveAll(name string) error {
	if err := e.check(OpRemoveAll, name); err != nil {
		return err
	}
	return e.fs.RemoveAll(name)
}

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(name string) error {
	if err := e.check(OpSyncDir, name); err != nil {
		return err
	}
	return e.fs.SyncDir(name)
}

// errorFile injects errors into the operations on one open file.
type errorFile struct {
	f    File
	e    *ErrorFS
	name string
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.e.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

// Write fails whole: nothing of p reaches the file, as with a disk that is
// already full when the write starts.
func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.e.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

func (f *errorFile) Sync() error {
	if err := f.e.check(OpSync, f.name); err != nil {
		return err
	}
	return f.f.Sync()
}

// Close always closes the underlying file, so an injected close error does
// not leak a descriptor.
func (f *errorFile) Close() error {
	err := f.f.Close()
	if ierr := f.e.check(OpClose, f.name); ierr != nil {
		return ierr
	}
	return err
}

// Package vfs is the small filesystem interface that weir's durable storage
// (checkpoint storage first) is written against, so that tests can put an
// error-injecting filesystem under it.
//
// Production code uses OS, a thin layer over package os. Tests wrap it:
//
//	rec := &vfs.Recorder{}
//	fsys := vfs.WithErrors(vfs.OS{}, vfs.Injectors{
//		rec,
//		vfs.OnOp(vfs.OpWrite, "1-0-keyed", syscall.ENOSPC), // disk full
//	})
//
// Every operation of the wrapped filesystem asks the injector first; a
// non-nil answer is returned as an *fs.PathError naming the operation and
// the path, exactly as a real failing syscall would be, and the operation is
// not performed. A Recorder that injects nothing logs the operations, so a
// test can assert the exact order of writes, syncs and renames.
//
// The interface is deliberately minimal: what storage needs, nothing more.
// SyncDir exists because a rename or a new file is durable only after its
// directory is synced.
//
// Owns: the filesystem interface and its fault-injecting wrappers. Must not
// touch: what is stored; layouts belong to internal/checkpoint/storage and
// the state backends (checked by internal/archtest).
package vfs

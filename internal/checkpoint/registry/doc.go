// Package registry reference-counts the shared files of incremental
// checkpoints (Flink's SharedStateRegistry, as a pure type). The JobManager
// owns one per job:
//
//	r := registry.New()
//	for _, md := range retained { r.Register(md.ID, names(md)) } // start-up: rebuilt from _metadata
//	r.Register(7, names(md7))         // checkpoint 7 completed
//	del := r.Release(4)               // retention dropped 4: delete del from shared/
//	del = r.Orphans(listed)           // nothing in flight: failed uploads
//
// The registry performs no IO and keeps no state of its own on disk: every
// reference is in the _metadata of a retained checkpoint, so rebuilding it
// at start-up loses nothing, whatever moment a crash hit. A file is deleted
// only when no registered checkpoint references it. Files uploaded for a
// checkpoint that never completed are orphans; Orphans finds them from a
// listing of the shared area, sparing those whose checkpoint is still in
// flight (their upload checkpoint is part of their name,
// checkpoint.SharedName).
//
// Owns: which shared file is still referenced. Must not touch: storage
// itself; the JobMaster deletes what Release and Orphans return (checked by
// internal/archtest).
package registry

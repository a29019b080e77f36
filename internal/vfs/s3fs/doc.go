// Package s3fs implements vfs.FS over S3 (or any S3-compatible object
// store), so that checkpoint storage runs unchanged on
// state.checkpoints.dir: s3://bucket/prefix.
//
// # Paths
//
// An FS serves every bucket of one endpoint. Its paths are OS-style
// absolute paths whose first element is the bucket and whose rest is the
// object key:
//
//	s3://bucket/a/b/_metadata   <->   /bucket/a/b/_metadata
//
// PathOf and URLOf translate between the two; callers hand storage the
// path and show users the URL, which is what --from and
// `weir checkpoints inspect` accept back.
//
// # Mapping filesystem operations onto objects
//
// S3 has objects and key prefixes, not files and directories, so each
// operation is the closest object-store equivalent that keeps the contract
// checkpoint storage relies on:
//
//   - Create returns a File that buffers up to one part in memory; a file
//     that stays smaller is stored with one PutObject at Close, a larger
//     one streams as a multipart upload that Close completes. Either way
//     the object becomes visible only once it is whole: S3 never shows a
//     partly written object. That is the "metadata written last,
//     atomically" rule checkpoint storage needs.
//   - File.Sync does nothing: nothing is visible or durable before Close,
//     and once Close returned without error the object is stored durably
//     by S3 (a PUT or CompleteMultipartUpload is acknowledged only after
//     the object is replicated). Storage checks Close's error, so it never
//     acknowledges a state file or a checkpoint whose upload did not finish.
//   - Rename is a server-side CopyObject followed by RemoveObject. It is
//     not atomic as a pair, but storage renames only _metadata.tmp to
//     _metadata, and the copy makes the target appear whole or not at all;
//     a crash between copy and delete leaves a stray _metadata.tmp beside a
//     complete _metadata, which storage ignores, and removes with the
//     checkpoint directory. (A single CopyObject copies at most 5 GiB;
//     metadata is far smaller.)
//   - Directories are key prefixes: MkdirAll and SyncDir do nothing, a
//     directory exists while some object has its prefix, ReadDir lists one
//     level with the "/" delimiter (paging through any number of objects),
//     and RemoveAll deletes every object under the prefix in batches.
//     ReadDir of a prefix holding nothing returns no entries, not an error:
//     on S3 an empty directory and a missing one are the same thing.
//   - Stat uses StatObject, and for a directory a listing of one key.
//
// Errors come back as *fs.PathError (or *os.LinkError for Rename) naming
// the s3:// URL; a missing object or bucket matches fs.ErrNotExist and a
// refused request fs.ErrPermission, and each S3 error says what to fix.
//
// # Configuration
//
// New builds a client from a Config; ConfigFrom fills one from weir's
// configuration keys (s3.endpoint, s3.region, s3.access-key,
// s3.secret-key, s3.session-token, s3.path.style.access,
// s3.connection.ssl.enabled), falling back to the standard AWS environment
// variables. Probe checks, before a job starts, that the endpoint answers,
// the credentials are accepted and the bucket exists, so that none of
// those surfaces mid-run.
//
// Owns: the S3 filesystem and its configuration keys. Must not touch: what
// is stored in it (checked by internal/archtest).
package s3fs

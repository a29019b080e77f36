package s3fs

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Scheme starts every URL this package accepts.
const Scheme = "s3://"

// IsURL reports whether loc is an s3:// URL (the scheme is case-insensitive,
// as in URLs generally).
func IsURL(loc string) bool {
	return len(loc) >= len(Scheme) && strings.EqualFold(loc[:len(Scheme)], Scheme)
}

// PathOf returns the FS path of an s3://bucket/key URL: /bucket/key. The key
// is cleaned (duplicate and trailing slashes dropped); a URL without a
// bucket, with an invalid bucket name, or whose key climbs out of the bucket
// with ".." is an error that says so.
func PathOf(loc string) (string, error) {
	if !IsURL(loc) {
		return "", fmt.Errorf("%q is not an s3:// URL; write s3://bucket/prefix", loc)
	}
	rest := loc[len(Scheme):]
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return "", fmt.Errorf("%q names no bucket; write s3://bucket/prefix", loc)
	}
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return "", fmt.Errorf("%q: bucket name %q: %v", loc, bucket, err)
	}
	for _, el := range strings.Split(key, "/") {
		if el == ".." {
			return "", fmt.Errorf("%q: key %q contains \"..\"; give the key without relative elements", loc, key)
		}
	}
	return path.Clean("/" + bucket + "/" + key), nil
}

// URLOf returns the s3:// URL of an FS path, the inverse of PathOf. Paths
// are shown to users this way, so that they can be passed back (--from).
func URLOf(p string) string {
	s := strings.TrimPrefix(path.Clean(filepath.ToSlash(p)), "/")
	return Scheme + s
}

// split maps an FS path to its bucket and key; "/" has neither, "/bucket"
// has no key.
func split(name string) (bucket, key string, err error) {
	p := filepath.ToSlash(name)
	if !strings.HasPrefix(p, "/") {
		return "", "", fmt.Errorf("path %q is not absolute; s3fs paths are /bucket/key", name)
	}
	p = path.Clean(p)[1:]
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key, nil
}

// Paths translates between user-facing locations and FS paths for storage
// on S3: it implements the runtime's savepoint-target and display mapping.
// The zero value is ready to use.
type Paths struct{}

// StoragePath maps a location a user gave (a savepoint target) to an FS
// path. Only s3:// URLs are accepted: a savepoint of a job whose checkpoints
// are on S3 is copied server-side within S3.
func (Paths) StoragePath(loc string) (string, error) {
	if !IsURL(loc) {
		return "", fmt.Errorf("%q is not an s3:// URL: checkpoint storage is on S3, so savepoints are written to S3 too; give a target such as s3://bucket/savepoints", loc)
	}
	return PathOf(loc)
}

// Location returns the s3:// URL of an FS path.
func (Paths) Location(p string) string { return URLOf(p) }

package s3fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weirstream/weir/internal/vfs"
)

// FS is a vfs.FS over the buckets of one S3 endpoint; see the package doc
// for how paths and operations map onto objects. It is safe for concurrent
// use.
type FS struct {
	client   *minio.Client
	endpoint string // as configured, for messages
	partSize int64
	pageSize int // objects per listing request; 0: the service's (1000)
}

var _ vfs.FS = (*FS)(nil)

// New returns an FS for the endpoint cfg describes. It sends no request;
// call Probe to check the endpoint, credentials and bucket.
func New(cfg Config) (*FS, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	host, secure, err := cfg.endpoint()
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	tr := cfg.Transport
	if tr == nil && cfg.CABundle != "" {
		tc, err := cfg.tlsConfig()
		if err != nil {
			return nil, err
		}
		t, err := minio.DefaultTransport(secure)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = tc
		tr = t
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, &minio.Options{
		Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup,
		Transport: tr, MaxRetries: cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", host, err)
	}
	ps := cfg.PartSize
	if ps == 0 {
		ps = DefaultPartSize
	}
	ep := cfg.Endpoint
	if ep == "" {
		ep = DefaultEndpoint
	}
	return &FS{client: client, endpoint: ep, partSize: ps}, nil
}

// Probe checks that the S3 location of path (an FS path, /bucket/prefix)
// can be used: the endpoint answers, it accepts the credentials, and the
// bucket exists and may be listed. Each failure names the thing and the
// fix, so that a job fails at start-up instead of at its first checkpoint.
// Writing is proven afterwards by storage's own probe file.
func (f *FS) Probe(ctx context.Context, path string) error {
	bucket, key, err := split(path)
	if err != nil {
		return err
	}
	if bucket == "" {
		return fmt.Errorf("%s names no bucket; write s3://bucket/prefix", URLOf(path))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := ""
	if key != "" {
		prefix = key + "/"
	}
	for obj := range f.client.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: 1}) {
		if obj.Err != nil {
			return f.probeErr(ctx, path, bucket, obj.Err)
		}
		break
	}
	return nil
}

func (f *FS) probeErr(ctx context.Context, path, bucket string, err error) error {
	mapped := mapErr(err, bucket)
	var s3err *Error
	if errors.As(mapped, &s3err) {
		return fmt.Errorf("s3 storage %s at %s: %w", URLOf(path), f.endpoint, mapped)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("s3 storage %s: no answer from %s in time (%w); check s3.endpoint or AWS_ENDPOINT_URL_S3 and the network", URLOf(path), f.endpoint, err)
	}
	return fmt.Errorf("s3 storage %s: cannot reach %s: %w; check s3.endpoint or AWS_ENDPOINT_URL_S3 (and s3.connection.ssl.enabled), and that the service is up", URLOf(path), f.endpoint, err)
}

// object splits name for an operation on an object: it must have a key.
func object(op, name string) (bucket, key string, err error) {
	bucket, key, err = split(name)
	if err != nil {
		return "", "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	if key == "" {
		return "", "", &fs.PathError{Op: op, Path: URLOf(name), Err: syscall.EISDIR}
	}
	return bucket, key, nil
}

// Create implements vfs.FS: the object appears, whole, when the returned
// File is closed without error.
func (f *FS) Create(name string) (vfs.File, error) {
	bucket, key, err := object("create", name)
	if err != nil {
		return nil, err
	}
	return &writer{fs: f, name: name, bucket: bucket, key: key}, nil
}

// Open implements vfs.FS. The object's existence is checked here, so a
// missing one fails Open with fs.ErrNotExist as a file would.
func (f *FS) Open(name string) (vfs.File, error) {
	bucket, key, err := object("open", name)
	if err != nil {
		return nil, err
	}
	obj, err := f.client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat()
		if err != nil {
			obj.Close()
		}
	}
	if err != nil {
		return nil, pathErr("open", name, bucket, err)
	}
	return &reader{obj: obj, name: name, bucket: bucket}, nil
}

// Stat implements vfs.FS. A key that is no object but the prefix of some
// is a directory; "/" and an existing bucket are directories too.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	base := baseName(bucket, key)
	switch {
	case bucket == "":
		return dirInfo(base), nil
	case key == "":
		ok, err := f.client.BucketExists(context.Background(), bucket)
		if err != nil {
			return nil, pathErr("stat", name, bucket, err)
		}
		if !ok {
			return nil, &fs.PathError{Op: "stat", Path: URLOf(name), Err: mapErr(minio.ErrorResponse{Code: "NoSuchBucket", StatusCode: 404}, bucket)}
		}
		return dirInfo(base), nil
	}
	oi, err := f.client.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return fileInfo{name: base, size: oi.Size, mtime: oi.LastModified}, nil
	}
	if err := mapErr(err, bucket); !errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "stat", Path: URLOf(name), Err: err}
	}
	has, lerr := f.hasChildren(bucket, key)
	if lerr != nil {
		return nil, pathErr("stat", name, bucket, lerr)
	}
	if !has {
		return nil, pathErr("stat", name, bucket, err)
	}
	return dirInfo(base), nil
}

// hasChildren reports whether some object's key starts with key + "/".
func (f *FS) hasChildren(bucket, key string) (bool, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for obj := range f.client.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true, MaxKeys: 1}) {
		if obj.Err != nil {
			return false, obj.Err
		}
		return true, nil
	}
	return false, nil
}

// MkdirAll implements vfs.FS. It does nothing but check the path: S3 has no
// directories to create; a prefix exists once an object under it does.
func (f *FS) MkdirAll(name string, _ fs.FileMode) error {
	if _, _, err := split(name); err != nil {
		return &fs.PathError{Op: "mkdirall", Path: name, Err: err}
	}
	return nil
}

// SyncDir implements vfs.FS. It does nothing: an object's name is durable
// together with its content once the upload that created it (or the copy,
// or the delete that removed it) was acknowledged.
func (f *FS) SyncDir(name string) error {
	if _, _, err := split(name); err != nil {
		return &fs.PathError{Op: "syncdir", Path: name, Err: err}
	}
	return nil
}

// Rename implements vfs.FS for objects (not directories) with a
// server-side copy and a delete of the source: the new name appears whole
// or not at all, and until the delete the old one still exists too (see
// the package doc for why that is safe for checkpoint metadata).
func (f *FS) Rename(oldname, newname string) error {
	linkErr := func(bucket string, err error) error {
		return &os.LinkError{Op: "rename", Old: URLOf(oldname), New: URLOf(newname), Err: mapErr(err, bucket)}
	}
	ob, ok, err := object("rename", oldname)
	if err != nil {
		return err
	}
	nb, nk, err := object("rename", newname)
	if err != nil {
		return err
	}
	_, err = f.client.CopyObject(context.Background(),
		minio.CopyDestOptions{Bucket: nb, Object: nk},
		minio.CopySrcOptions{Bucket: ob, Object: ok})
	if err != nil {
		return linkErr(ob, err)
	}
	if err := f.client.RemoveObject(context.Background(), ob, ok, minio.RemoveObjectOptions{}); err != nil {
		return linkErr(ob, err)
	}
	return nil
}

// Remove implements vfs.FS with os.Remove's contract: a missing object is
// fs.ErrNotExist (S3's delete alone would not say), and a prefix that still
// has objects is a non-empty directory.
func (f *FS) Remove(name string) error {
	bucket, key, err := object("remove", name)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := f.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); err != nil {
		if !errors.Is(mapErr(err, bucket), fs.ErrNotExist) {
			return pathErr("remove", name, bucket, err)
		}
		has, lerr := f.hasChildren(bucket, key)
		if lerr != nil {
			return pathErr("remove", name, bucket, lerr)
		}
		if has {
			return &fs.PathError{Op: "remove", Path: URLOf(name), Err: syscall.ENOTEMPTY}
		}
		return pathErr("remove", name, bucket, err)
	}
	if err := f.client.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return pathErr("remove", name, bucket, err)
	}
	return nil
}

// RemoveAll implements vfs.FS: it deletes the object name and every object
// under name + "/", in batches of up to 1000 keys. It refuses to empty a
// whole bucket.
func (f *FS) RemoveAll(name string) error {
	bucket, key, err := object("removeall", name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := make(chan minio.ObjectInfo)
	listed := make(chan struct{})
	var listErr error
	go func() {
		defer close(listed)
		defer close(keys)
		select {
		case keys <- minio.ObjectInfo{Key: key}:
		case <-ctx.Done():
			return
		}
		for obj := range f.client.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true, MaxKeys: f.pageSize}) {
			if obj.Err != nil {
				listErr = obj.Err
				return
			}
			select {
			case keys <- minio.ObjectInfo{Key: obj.Key}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var rmErr error
	for e := range f.client.RemoveObjects(ctx, bucket, keys, minio.RemoveObjectsOptions{}) {
		if rmErr == nil && e.Err != nil && !errors.Is(mapErr(e.Err, bucket), fs.ErrNotExist) {
			rmErr = fmt.Errorf("delete %s: %w", URLOf("/"+bucket+"/"+e.ObjectName), mapErr(e.Err, bucket))
			cancel()
		}
	}
	// The lister returns once ctx is done; after that listErr is safe to
	// read.
	cancel()
	<-listed
	if err := errors.Join(rmErr, mapErr(listErr, bucket)); err != nil {
		return &fs.PathError{Op: "removeall", Path: URLOf(name), Err: err}
	}
	return nil
}

// baseName is the last element of a path, as fs.FileInfo.Name has it.
func baseName(bucket, key string) string {
	if key == "" {
		if bucket == "" {
			return "/"
		}
		return bucket
	}
	return key[strings.LastIndexByte(key, '/')+1:]
}

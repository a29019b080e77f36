package s3fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/minio/minio-go/v7"
)

// errWriteOnly and errReadOnly answer the wrong direction on a File.
var (
	errWriteOnly = errors.New("file was opened for writing")
	errReadOnly  = errors.New("file was opened for reading")
	errClosed    = errors.New("file already closed")
)

// writer is a File being created. Bytes collect in buf until it holds a
// whole part; a file that ends before that is stored by Close with one
// PutObject. A bigger one switches to a multipart upload that streams
// through a pipe from then on, and Close completes it. Nothing is visible
// under the key before Close returns.
type writer struct {
	fs          *FS
	name        string
	bucket, key string
	buf         bytes.Buffer
	pw          *io.PipeWriter // non-nil once streaming
	done        chan error     // the streaming upload's result
	err         error          // sticky: the first failure
	closed      bool
}

func (w *writer) Write(p []byte) (int, error) {
	switch {
	case w.closed:
		return 0, &fs.PathError{Op: "write", Path: URLOf(w.name), Err: errClosed}
	case w.err != nil:
		return 0, w.err
	case w.pw != nil:
		n, err := w.pw.Write(p)
		if err != nil {
			w.err = pathErr("write", w.name, w.bucket, err)
		}
		return n, w.err
	}
	w.buf.Write(p)
	if int64(w.buf.Len()) >= w.fs.partSize {
		w.stream()
	}
	return len(p), nil
}

// stream starts the multipart upload, fed first with what is buffered and
// then with every later Write.
func (w *writer) stream() {
	pr, pw := io.Pipe()
	w.pw, w.done = pw, make(chan error, 1)
	head := bytes.NewReader(w.buf.Bytes())
	go func() {
		_, err := w.fs.client.PutObject(context.Background(), w.bucket, w.key,
			io.MultiReader(head, pr), -1, w.fs.putOptions())
		// Unblock a Write waiting on a failed upload; harmless after
		// success, when the writer side is already closed.
		pr.CloseWithError(errUploadEnded(err))
		w.done <- err
	}()
}

func errUploadEnded(err error) error {
	if err != nil {
		return err
	}
	return io.ErrClosedPipe
}

// Sync implements vfs.File and does nothing: see the package doc. An
// object is neither visible nor durable before Close, and both once Close
// succeeded; callers that need durability check Close's error.
func (w *writer) Sync() error {
	if w.closed {
		return &fs.PathError{Op: "sync", Path: URLOf(w.name), Err: errClosed}
	}
	return w.err
}

// Close stores the object, or completes its multipart upload, and returns
// only once S3 has acknowledged it.
func (w *writer) Close() error {
	if w.closed {
		return &fs.PathError{Op: "close", Path: URLOf(w.name), Err: errClosed}
	}
	w.closed = true
	if w.pw != nil {
		w.pw.Close()
		if err := <-w.done; err != nil && w.err == nil {
			w.err = pathErr("close", w.name, w.bucket, err)
		}
		return w.err
	}
	if w.err != nil {
		return w.err
	}
	_, err := w.fs.client.PutObject(context.Background(), w.bucket, w.key,
		bytes.NewReader(w.buf.Bytes()), int64(w.buf.Len()), w.fs.putOptions())
	w.buf = bytes.Buffer{}
	if err != nil {
		return pathErr("close", w.name, w.bucket, err)
	}
	return nil
}

func (w *writer) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: URLOf(w.name), Err: errWriteOnly}
}

// reader is a File open for reading: the body of one GetObject.
type reader struct {
	obj    *minio.Object
	name   string
	bucket string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.obj.Read(p)
	if err != nil && err != io.EOF {
		err = pathErr("read", r.name, r.bucket, err)
	}
	return n, err
}

func (r *reader) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: URLOf(r.name), Err: errReadOnly}
}

// Sync implements vfs.File; there is nothing to flush on a reader.
func (r *reader) Sync() error { return nil }

func (r *reader) Close() error { return r.obj.Close() }

// putOptions are the options of every upload. Each part carries a
// Content-MD5 that S3 checks before accepting it, so a body damaged in
// transit is refused at write time rather than found by the checksum at
// restore; with it the payload need not also be hashed with SHA-256 for
// the request signature (UNSIGNED-PAYLOAD), which would cost a second pass
// over every byte.
func (f *FS) putOptions() minio.PutObjectOptions {
	return minio.PutObjectOptions{
		PartSize:             uint64(f.partSize),
		ContentType:          "application/octet-stream",
		SendContentMd5:       true,
		DisableContentSha256: true,
	}
}

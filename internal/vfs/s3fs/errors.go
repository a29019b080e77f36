package s3fs

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// Error is an error answer of the S3 service, with what to do about it.
// It matches fs.ErrNotExist for a missing object or bucket and
// fs.ErrPermission for a refused request, so callers written against a
// filesystem test it the usual way.
type Error struct {
	// Code is S3's error code (NoSuchKey, AccessDenied, …).
	Code string
	// Message is the service's own description.
	Message string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Fix says what to change, when there is an obvious remedy.
	Fix  string
	kind error // fs.ErrNotExist, fs.ErrPermission or nil
}

func (e *Error) Error() string {
	s := "s3 " + e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// StorageFailure reports an answer that means the storage fails rather
// than the request: a server error, throttling, or a refused request
// (checkpoint.storage.IsStorageFailure reads it).
func (e *Error) StorageFailure() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests || e.kind == fs.ErrPermission
}

// Is makes errors.Is(err, fs.ErrNotExist) and fs.ErrPermission work.
func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

// mapErr turns a minio error into an *Error naming the fix; errors that
// are not S3 answers (network, context) pass through unchanged.
func mapErr(err error, bucket string) error {
	if err == nil {
		return nil
	}
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) || (resp.Code == "" && resp.StatusCode == 0) {
		return err
	}
	e := &Error{Code: resp.Code, Message: resp.Message, StatusCode: resp.StatusCode}
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		e.kind = fs.ErrNotExist
	case "NoSuchBucket":
		e.kind = fs.ErrNotExist
		e.Fix = fmt.Sprintf("bucket %q does not exist on this endpoint; create it (weir does not create buckets) or fix the bucket in the s3:// URL", bucket)
	case "InvalidAccessKeyId":
		e.kind = fs.ErrPermission
		e.Fix = "the access key is unknown to this endpoint; check s3.access-key or AWS_ACCESS_KEY_ID (and s3.endpoint: keys of one service do not work on another)"
	case "SignatureDoesNotMatch":
		e.kind = fs.ErrPermission
		e.Fix = "the secret key does not belong to the access key; check s3.secret-key or AWS_SECRET_ACCESS_KEY"
	case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		e.kind = fs.ErrPermission
		e.Fix = "the session token is expired or invalid; refresh s3.session-token or AWS_SESSION_TOKEN"
	case "AccessDenied", "AllAccessDisabled":
		e.kind = fs.ErrPermission
		e.Fix = fmt.Sprintf("the credentials may not use bucket %q; grant s3:ListBucket on it and s3:GetObject, s3:PutObject, s3:DeleteObject on its objects", bucket)
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
		e.Fix = fmt.Sprintf("bucket %q is in another region; set s3.region or AWS_REGION to the bucket's region", bucket)
	default:
		switch resp.StatusCode {
		case http.StatusNotFound:
			e.kind = fs.ErrNotExist
		case http.StatusForbidden:
			e.kind = fs.ErrPermission
		}
	}
	return e
}

// pathErr wraps a failed operation on name as the OS would, naming the
// object by its URL.
func pathErr(op, name, bucket string, err error) error {
	return &fs.PathError{Op: op, Path: URLOf(name), Err: mapErr(err, bucket)}
}

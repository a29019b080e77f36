package s3fs_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts goroutines (streaming uploads, batched deletes); none
// may outlive the call that started it. Idle HTTP keep-alive connections
// of the client are not leaks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

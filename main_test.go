package weir_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves that every goroutine a job started (tasks, snapshot and
// metadata writers, timers) has stopped once Env.Execute returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

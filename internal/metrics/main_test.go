package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves the jobs these tests run stopped every goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

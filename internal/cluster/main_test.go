package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves that Dispatchers and TaskManager clients stop every
// goroutine they start.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

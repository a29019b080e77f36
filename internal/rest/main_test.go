package rest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves the jobs and servers these tests start stopped every
// goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

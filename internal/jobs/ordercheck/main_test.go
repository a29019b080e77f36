package ordercheck_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves that every task, snapshot writer and metadata writer of
// every job these tests run has stopped once Env.Execute returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain proves that every client the connectors and the tests create,
// and every kfake cluster, has stopped once the tests are done.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

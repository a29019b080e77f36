package logagg_test

import (
	"testing"

	"go.uber.org/goleak"
)

// FlushEvery starts a goroutine; its stop must end it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

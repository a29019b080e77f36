package lsm

import (
	"testing"

	"go.uber.org/goleak"
)

// Pebble runs flushes and compactions on goroutines of its own; Close must
// stop all of them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

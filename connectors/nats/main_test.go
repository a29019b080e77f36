package nats

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain proves that every connection, consumer and embedded server the
// tests start has stopped once they are done. A closed connection's
// goroutines and a shut-down server's end asynchronously; one still there
// after 15 s is a leak.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := goleak.Find()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	os.Exit(code)
}

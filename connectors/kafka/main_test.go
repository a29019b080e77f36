package kafka

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain proves that every client the connectors and the tests create,
// and every kfake cluster, has stopped once the tests are done. franz-go
// stops a closed client's fetch manager asynchronously, once its in-flight
// fetches return, which can take longer than goleak's own retries on a
// loaded machine: a goroutine still there after 15 s is a leak.
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

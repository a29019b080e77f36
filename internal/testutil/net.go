package testutil

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address whose port is free right now, for a
// process a test starts (and may restart) on a known address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

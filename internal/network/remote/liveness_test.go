package remote

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestLivenessOptions: both ends of a data connection get keepalive and,
// on Linux, TCP_USER_TIMEOUT from PeerTimeout, so that a peer that stops
// answering (a partition) closes the connection. The partition itself is
// cmd/weir's TestPartitions.
func TestLivenessOptions(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := livenessListener{Listener: raw, timeout: 8 * time.Second}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	dialed, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	if err := setLiveness(dialed, 8*time.Second); err != nil {
		t.Fatal(err)
	}
	acc := <-accepted
	if acc == nil {
		return
	}
	defer acc.Close()
	for name, c := range map[string]net.Conn{"dialed": dialed, "accepted": acc} {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var keep, user int
		var kerr, uerr error
		rc.Control(func(fd uintptr) {
			keep, kerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			if runtime.GOOS == "linux" {
				user, uerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout)
			}
		})
		if kerr != nil || keep != 1 {
			t.Errorf("%s: SO_KEEPALIVE = %d, %v; want 1", name, keep, kerr)
		}
		if runtime.GOOS == "linux" && (uerr != nil || user != 8000) {
			t.Errorf("%s: TCP_USER_TIMEOUT = %d ms, %v; want 8000", name, user, uerr)
		}
	}
}

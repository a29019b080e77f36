package remote

import (
	"net"
	"syscall"
	"time"
)

// setUserTimeout sets TCP_USER_TIMEOUT: sent data unacknowledged for d
// closes the connection.
func setUserTimeout(tc *net.TCPConn, d time.Duration) error {
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(d.Milliseconds()))
	}); err != nil {
		return err
	}
	return serr
}

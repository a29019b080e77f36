//go:build !linux

package remote

import (
	"net"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist: the
// keepalive probes alone bound an idle connection's silence there.
func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }

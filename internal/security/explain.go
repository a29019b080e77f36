package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// Keys named by the messages.
const (
	enabledKey = "security.ssl.internal.enabled"
	caKey      = "security.ssl.internal.ca-file"
	filesKeys  = "security.ssl.internal.cert-file/key-file/ca-file"
)

// ErrHandshake marks a TLS handshake that failed for a reason of
// certificates or configuration, which no retry fixes.
var ErrHandshake = errors.New("TLS handshake refused")

// ServerError explains why the TLS handshake with the peer (a "TaskManager
// or client") at addr failed on the serving side, naming the key the peer
// must set. It wraps ErrHandshake and err.
func ServerError(peer, addr, caFile string, err error) error {
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	msg := err.Error()
	switch {
	case errors.As(err, &rh):
		return fmt.Errorf("%w: %s at %s did not start a TLS handshake (a plain connection): set %s=true and %s on it", ErrHandshake, peer, addr, enabledKey, filesKeys)
	case strings.Contains(msg, "didn't provide a certificate"):
		return fmt.Errorf("%w: %s at %s presented no certificate signed by %s (%s): set %s on it", ErrHandshake, peer, addr, caKey, caFile, filesKeys)
	case errors.As(err, &ua):
		return fmt.Errorf("%w: %s at %s presented a certificate not signed by %s (%s): give it a certificate that CA signed (%s)", ErrHandshake, peer, addr, caKey, caFile, filesKeys)
	case errors.As(err, &ci):
		return fmt.Errorf("%w: %s at %s presented an invalid certificate (%v): give it a certificate signed by %s (%s)", ErrHandshake, peer, addr, err, caKey, caFile)
	case isRemoteAlert(err):
		return fmt.Errorf("%w: %s at %s refused this process's certificate (%v): set %s here to a certificate signed by the CA it trusts", ErrHandshake, peer, addr, err, filesKeys)
	}
	return fmt.Errorf("TLS handshake with %s at %s: %w (check %s on both sides)", peer, addr, err, filesKeys)
}

// ClientError explains why dialling the server (a "JobManager" or
// "TaskManager") at addr over TLS failed, naming the key to set. Errors
// that are not about TLS are returned as they are; the others wrap
// ErrHandshake and err.
func ClientError(server, addr, caFile string, err error) error {
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &rh):
		return fmt.Errorf("%w: %s at %s does not speak TLS: set %s=true with %s on it too, or false here", ErrHandshake, server, addr, enabledKey, filesKeys)
	case errors.As(err, &ua):
		return fmt.Errorf("%w: %s at %s presented a certificate not signed by %s (%s): set %s the same on every process", ErrHandshake, server, addr, caKey, caFile, filesKeys)
	case errors.As(err, &hn):
		return fmt.Errorf("%w: %s at %s presented a certificate not valid for the address dialled (%v): give it a certificate whose SANs name that host (security.ssl.internal.cert-file)", ErrHandshake, server, addr, err)
	case errors.As(err, &ci):
		return fmt.Errorf("%w: %s at %s presented an invalid certificate (%v): renew its security.ssl.internal.cert-file", ErrHandshake, server, addr, err)
	case isRemoteAlert(err):
		return fmt.Errorf("%w: %s at %s refused the TLS handshake (%v): set %s to a certificate signed by the CA it trusts", ErrHandshake, server, addr, err, filesKeys)
	}
	return err
}

// PlainHint explains a connection that a server closed before it answered
// a plain (non-TLS) client: most likely the server requires TLS.
func PlainHint(server, addr string) string {
	return fmt.Sprintf("%s at %s closed the connection without answering: if it has %s=true, set it here too with %s", server, addr, enabledKey, filesKeys)
}

// isRemoteAlert reports a TLS alert the peer sent (crypto/tls returns it
// as a *net.OpError with Op "remote error").
func isRemoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// IsEOF reports whether err is the end of a connection.
func IsEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

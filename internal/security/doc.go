// Package security builds the TLS configurations of weir's processes from
// the security.ssl.* keys, explains refused handshakes with the key to set,
// and makes the certificates of `weir tools certs`.
package security

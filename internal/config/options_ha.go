package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// High-availability keys: leader election and the recovery metadata of
// JobManagers on etcd (internal/ha, docs/cluster.md). The first three are
// Flink's names; Flink has no etcd service, so the etcd keys follow the
// shape of its ZooKeeper and Kubernetes ones. Like the cluster keys they
// are read by the process roles and the client commands, not by a job.
const (
	HAType            = "high-availability.type"
	HAStorageDir      = "high-availability.storageDir"
	HAClusterID       = "high-availability.cluster-id"
	HAEtcdEndpoints   = "high-availability.etcd.endpoints"
	HAEtcdUsername    = "high-availability.etcd.username"
	HAEtcdPassword    = "high-availability.etcd.password"
	HAEtcdTLSCAFile   = "high-availability.etcd.tls.ca-file"
	HAEtcdTLSCertFile = "high-availability.etcd.tls.cert-file"
	HAEtcdTLSKeyFile  = "high-availability.etcd.tls.key-file"
	HAEtcdLeaseTTL    = "high-availability.etcd.lease-ttl"
	HAEtcdDialTimeout = "high-availability.etcd.dial-timeout"
)

// Values of high-availability.type.
const (
	HATypeNone = "NONE"
	HATypeEtcd = "etcd"
)

func haOptions() []Option {
	return []Option{
		{Key: HAType, Default: HATypeNone, Kind: KindEnum,
			Enum:         []string{HATypeNone, HATypeEtcd},
			FallbackKeys: []string{"high-availability"},
			Description:  "High availability of the JobManager: NONE runs one JobManager that recovers only when restarted on the same state folder; etcd elects a leader among several JobManagers through etcd and keeps jobs, checkpoint pointers and checkpoint ids there, so a standby takes over when the leader dies."},
		{Key: HAStorageDir, Default: "", Kind: KindString,
			Description: "With high-availability.type etcd: shared storage (a path every JobManager and TaskManager sees, file:// or s3://bucket/prefix) where jobs that name no state.checkpoints.dir keep their checkpoints; etcd holds the job records and pointers to the registered checkpoints. Required by JobManagers with etcd (TaskManagers and clients only find the leader)."},
		{Key: HAClusterID, Default: "/default", Kind: KindString, Validate: clusterIDValid,
			Description: "Name of this cluster in etcd: every key lives under /weir<cluster-id>, so clusters that share an etcd must use different ids."},
		{Key: HAEtcdEndpoints, Default: "", Kind: KindString, Validate: endpointsValid,
			Description: "Comma-separated etcd client URLs, host:port or http(s)://host:port (use https with the tls keys). Required with etcd; a process that cannot reach any of them within dial-timeout does not start."},
		{Key: HAEtcdUsername, Default: "", Kind: KindString,
			Description: "etcd user for an etcd with authentication enabled, set together with high-availability.etcd.password; its role needs read and write on the prefix /weir<cluster-id>/."},
		{Key: HAEtcdPassword, Default: "", Kind: KindString,
			Description: "Password of high-availability.etcd.username."},
		{Key: HAEtcdTLSCAFile, Default: "", Kind: KindString,
			Description: "PEM file of the CAs that sign the etcd server certificates (https endpoints); empty: the system's CAs."},
		{Key: HAEtcdTLSCertFile, Default: "", Kind: KindString,
			Description: "PEM client certificate for etcd servers that require client certificates, set together with high-availability.etcd.tls.key-file."},
		{Key: HAEtcdTLSKeyFile, Default: "", Kind: KindString,
			Description: "PEM private key of high-availability.etcd.tls.cert-file."},
		{Key: HAEtcdLeaseTTL, Default: "10 s", Kind: KindDuration, Validate: durationAtLeast(time.Second),
			Description: "Lease of the leader, in whole seconds (rounded up): a leader that cannot renew it for this long steps down and suspends its jobs, and a standby takes over about this long after a leader dies without resigning. etcd raises values below 1.5 × its election timeout."},
		{Key: HAEtcdDialTimeout, Default: "5 s", Kind: KindDuration, Validate: durationPositive,
			Description: "How long a process waits for etcd to answer at start before it exits with an error naming the endpoints."},
	}
}

// durationAtLeast rejects durations below min.
func durationAtLeast(min time.Duration) func(string) error {
	return func(v string) error {
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		if d < min {
			return fmt.Errorf("must be >= %s", FormatDuration(min))
		}
		return nil
	}
}

// clusterIDValid accepts a cluster id that names something after its
// slashes are trimmed and holds no spaces or control characters.
func clusterIDValid(v string) error {
	if strings.Trim(v, "/") == "" {
		return fmt.Errorf(`must name the cluster, e.g. "/default"`)
	}
	if strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("must not contain spaces or control characters")
	}
	return nil
}

// endpointsValid checks the syntax of a comma-separated endpoint list;
// empty is "not set" (the high-availability code requires it with etcd).
func endpointsValid(v string) error {
	if v == "" {
		return nil
	}
	for _, e := range strings.Split(v, ",") {
		if err := CheckEtcdEndpoint(strings.TrimSpace(e)); err != nil {
			return err
		}
	}
	return nil
}

// CheckEtcdEndpoint checks one etcd endpoint: host:port or
// http(s)://host:port, nothing else.
func CheckEtcdEndpoint(e string) error {
	const form = "want host:port or http(s)://host:port"
	if e == "" {
		return fmt.Errorf("an endpoint is empty: %s, separated by commas", form)
	}
	hostport := e
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return fmt.Errorf("endpoint %q: %s", e, form)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("endpoint %q has scheme %q: %s", e, u.Scheme, form)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("endpoint %q has more than a host and port: %s", e, form)
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("endpoint %q: %s", e, form)
	}
	return nil
}

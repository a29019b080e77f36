package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHAKeys(t *testing.T) {
	c := New()
	if c.String(HAType) != HATypeNone || c.String(HAClusterID) != "/default" ||
		c.Duration(HAEtcdLeaseTTL) != 10*time.Second || c.Duration(HAEtcdDialTimeout) != 5*time.Second {
		t.Fatalf("HA defaults: type %q, cluster-id %q, lease-ttl %v, dial-timeout %v",
			c.String(HAType), c.String(HAClusterID), c.Duration(HAEtcdLeaseTTL), c.Duration(HAEtcdDialTimeout))
	}
	for _, tc := range []struct{ in, want string }{
		{"etcd", HATypeEtcd}, {"ETCD", HATypeEtcd}, {"none", HATypeNone}, {"NONE", HATypeNone},
	} {
		if err := c.Set(HAType, tc.in); err != nil || c.String(HAType) != tc.want {
			t.Errorf("Set(%s, %q) = %v, value %q; want %q", HAType, tc.in, err, c.String(HAType), tc.want)
		}
	}
	// Flink 1.x's spelling of the key loads too.
	if err := c.Set("high-availability", "etcd"); err != nil || c.String(HAType) != HATypeEtcd {
		t.Errorf("fallback key high-availability: %v, value %q", err, c.String(HAType))
	}
	ok := map[string]string{
		HAEtcdEndpoints: "127.0.0.1:2379, https://etcd-0.etcd:2379,http://[::1]:2379",
		HAEtcdLeaseTTL:  "1 s",
		HAClusterID:     "prod-eu",
	}
	for k, v := range ok {
		if err := c.Set(k, v); err != nil {
			t.Errorf("Set(%s, %q) = %v", k, v, err)
		}
	}
}

func TestHAKeysRefuseBadValues(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{HAType, "zookeeper", "want one of NONE, etcd"},
		{HAEtcdLeaseTTL, "500 ms", "must be >= 1 s"},
		{HAEtcdDialTimeout, "0", "must be > 0"},
		{HAEtcdEndpoints, "127.0.0.1", "want host:port"},
		{HAEtcdEndpoints, "a:1,,b:2", "an endpoint is empty"},
		{HAEtcdEndpoints, "unix://x:1", `scheme "unix"`},
		{HAEtcdEndpoints, "http://a:1/v3", "more than a host and port"},
		{HAClusterID, "/", "must name the cluster"},
		{HAClusterID, "a b", "spaces"},
	} {
		err := New().Set(tc.key, tc.value)
		if err == nil || !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Set(%s, %q) = %v, want ErrBadValue naming the key and %q", tc.key, tc.value, err, tc.want)
		}
	}
}

package cluster

import (
	"context"
	"strings"
	"testing"
)

// A client learns the JobManager's REST address over real gRPC; a
// JobManager without REST answers with an error naming the cause.
func TestClientRESTAddress(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{RESTAddress: "127.0.0.1:0"})
	cl, err := Dial(context.Background(), ClientConfig{Address: c.jmAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, err := cl.RESTAddress(context.Background())
	if err != nil || "http://"+got != c.restURL {
		t.Fatalf("RESTAddress = %q, %v; want %q", got, err, c.restURL)
	}

	off := startTestCluster(t, JobManagerConfig{})
	cl2, err := Dial(context.Background(), ClientConfig{Address: off.jmAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if _, err := cl2.RESTAddress(context.Background()); err == nil || !strings.Contains(err.Error(), "serves no REST API") {
		t.Fatalf("RESTAddress without REST: %v", err)
	}
}

func TestReachableREST(t *testing.T) {
	for _, tc := range []struct{ rest, rpc, want string }{
		{"127.0.0.1:8081", "10.0.0.5:6123", "127.0.0.1:8081"},
		{"0.0.0.0:8081", "jm.example:6123", "jm.example:8081"},
		{"[::]:8081", "10.0.0.5:6123", "10.0.0.5:8081"},
		{":8081", "10.0.0.5:6123", "10.0.0.5:8081"},
	} {
		if got, err := reachableREST(tc.rest, tc.rpc); err != nil || got != tc.want {
			t.Errorf("reachableREST(%q, %q) = %q, %v; want %q", tc.rest, tc.rpc, got, err, tc.want)
		}
	}
}

package cluster

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// restAddressHeader is the response header of the List RPC in which the
// JobManager names its REST API's address (empty: it serves none). A
// client given only --jobmanager learns there where to send savepoint and
// stop requests, which the REST API serves and the RPC service does not.
const restAddressHeader = "weir-rest-address"

// announceREST sets restAddressHeader on the RPC's response.
func (m *jobManager) announceREST(ctx context.Context) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(restAddressHeader, m.restAddr))
}

// RESTAddress asks the JobManager for its REST API's address, HOST:PORT.
// A wildcard host (the API listens on every interface) is replaced by the
// host of the JobManager's rpc address, which this client reaches. Under
// high availability it asks the leader: a standby's answer moves the
// client there first.
func (c *Client) RESTAddress(ctx context.Context) (string, error) {
	var md metadata.MD
	err := c.call(ctx, "ask for the REST address", "", func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) error {
		md = nil
		_, err := jm.List(ctx, &pb.ListRequest{}, append(opts, grpc.Header(&md))...)
		return err
	})
	if err != nil {
		return "", err
	}
	v := md.Get(restAddressHeader)
	if len(v) == 0 || v[0] == "" {
		return "", fmt.Errorf("the JobManager at %s serves no REST API (its --rest-address is empty), which savepoints and stop need", c.Address())
	}
	return reachableREST(v[0], c.Address())
}

// reachableREST replaces a wildcard host of rest by rpc's host.
func reachableREST(rest, rpc string) (string, error) {
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return "", fmt.Errorf("the JobManager announced REST address %q: %w", rest, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		rpcHost, _, err := net.SplitHostPort(rpc)
		if err != nil {
			return "", fmt.Errorf("jobmanager address %q: %w", rpc, err)
		}
		host = rpcHost
	}
	return net.JoinHostPort(host, port), nil
}

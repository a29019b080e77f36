package app

import (
	"context"

	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/security"
)

// jobClient is what the client commands ask of a job's manager: a
// cluster's JobManager (clusterClient) or the REST API of a local run or
// of a JobManager (restClient). The answers use the RPC service's types.
type jobClient interface {
	List(ctx context.Context) ([]*pb.JobSummary, error)
	Cancel(ctx context.Context, job string) error
	Checkpoints(ctx context.Context, job string) (*pb.CheckpointsResponse, error)
	// Savepoint writes a savepoint of job under target and returns its
	// folder.
	Savepoint(ctx context.Context, job, target string) (string, error)
	// Stop stops job gracefully, with a final savepoint under target
	// unless target is empty, and returns the savepoint's folder.
	Stop(ctx context.Context, job, target string) (string, error)
	// Rescale changes job's parallelism in place (PUT
	// /jobs/{job}/resource-requirements).
	Rescale(ctx context.Context, job string, req rest.ResourceRequirements) (rest.RescaleResponse, error)
	Close() error
}

// clusterClient is a JobManager through its RPC service. Savepoints have
// no RPC: they go to the REST API whose address the JobManager (the
// leader) announces. ha, if set, is the etcd connection that finds the
// leader, closed with the client.
type clusterClient struct {
	*cluster.Client
	ha *haLeader
	// restTLS is security.ssl.rest.* for the JobManager's REST API
	// (savepoint, stop); nil: http.
	restTLS *security.REST
	// restToken is the REST API's bearer token (security.rest.token-file).
	restToken string
}

func (c clusterClient) Close() error {
	err := c.Client.Close()
	if c.ha != nil {
		c.ha.Close()
	}
	return err
}

func (c clusterClient) Savepoint(ctx context.Context, job, target string) (string, error) {
	r, err := c.rest(ctx)
	if err != nil {
		return "", err
	}
	return r.Savepoint(ctx, job, target)
}

func (c clusterClient) Stop(ctx context.Context, job, target string) (string, error) {
	r, err := c.rest(ctx)
	if err != nil {
		return "", err
	}
	return r.Stop(ctx, job, target)
}

func (c clusterClient) Rescale(ctx context.Context, job string, req rest.ResourceRequirements) (rest.RescaleResponse, error) {
	r, err := c.rest(ctx)
	if err != nil {
		return rest.RescaleResponse{}, err
	}
	return r.Rescale(ctx, job, req)
}

func (c clusterClient) rest(ctx context.Context) (restClient, error) {
	addr, err := c.RESTAddress(ctx)
	if err != nil {
		return restClient{}, err
	}
	return newRESTClient(addr, c.restToken).withTLS(c.restTLS), nil
}

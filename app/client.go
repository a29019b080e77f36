package app

import (
	"context"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir/internal/cluster"
)

// clientFlags are the flags of the commands that call a JobManager.
type clientFlags struct {
	jobmanager string
	timeout    time.Duration
}

// register adds --jobmanager (with def as its default) and
// --connect-timeout.
func (f *clientFlags) register(fs *pflag.FlagSet, def, usage string) {
	fs.StringVar(&f.jobmanager, "jobmanager", def, usage)
	fs.DurationVar(&f.timeout, "connect-timeout", defaultConnectTimeout, "how long to wait for the JobManager's connection")
}

// dial checks the address and connects.
func (f *clientFlags) dial(ctx context.Context, p *Program) (*cluster.Client, error) {
	if f.jobmanager == "" {
		return nil, Usagef("--jobmanager is empty: give the JobManager's rpc address HOST:PORT (or set %s)", EnvName("jobmanager"))
	}
	if _, _, err := net.SplitHostPort(f.jobmanager); err != nil {
		return nil, Usagef("--jobmanager %q: want HOST:PORT, e.g. 127.0.0.1:6123", f.jobmanager)
	}
	if f.timeout <= 0 {
		return nil, Usagef("--connect-timeout must be positive, got %s", f.timeout)
	}
	return cluster.Dial(ctx, cluster.ClientConfig{Address: f.jobmanager, DialTimeout: f.timeout, Command: p.name()})
}

// addressFlags are the addressing of the client commands (list, cancel,
// checkpoints, savepoint, stop): a cluster's JobManager by its rpc
// address, or a local run by its REST API.
type addressFlags struct {
	client clientFlags
	rest   string
}

func (f *addressFlags) register(fs *pflag.FlagSet) {
	f.client.register(fs, "127.0.0.1:6123", "the JobManager's rpc address HOST:PORT, for a job on a cluster")
	fs.StringVar(&f.rest, "rest-address", "", "the REST address HOST:PORT of a local run (run --rest-address), or of a JobManager, instead of --jobmanager")
}

// open connects to what the flags address.
func (f *addressFlags) open(ctx context.Context, fs *pflag.FlagSet, p *Program) (jobClient, error) {
	if f.rest == "" {
		cl, err := f.client.dial(ctx, p)
		if err != nil {
			return nil, err
		}
		return clusterClient{cl}, nil
	}
	if fs.Changed("jobmanager") {
		return nil, Usagef("give --jobmanager (a cluster) or --rest-address (a local run), not both")
	}
	if _, _, err := net.SplitHostPort(f.rest); err != nil {
		return nil, Usagef("--rest-address %q: want HOST:PORT, e.g. 127.0.0.1:8081", f.rest)
	}
	return newRESTClient(f.rest), nil
}

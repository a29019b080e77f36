package app

import (
	"context"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/security"
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

// dial checks the flags and connects: to the JobManagers of the
// --jobmanager list or, when cfg configures high availability
// (high-availability.type: etcd), to the leader etcd names, followed by
// the --jobmanager list only if it was given explicitly.
func (f *clientFlags) dial(ctx context.Context, p *Program, fs *pflag.FlagSet, cfg *weir.Config) (clusterClient, error) {
	if f.timeout <= 0 {
		return clusterClient{}, Usagef("--connect-timeout must be positive, got %s", f.timeout)
	}
	h, err := connectHA(ctx, cfg, nil)
	if err != nil {
		return clusterClient{}, err
	}
	list, err := jobManagerList(fs, f.jobmanager, h != nil)
	var rpcTLS *security.Internal
	var restT *security.REST
	if err == nil {
		rpcTLS, err = internalTLS(cfg)
	}
	if err == nil {
		restT, err = restTLS(cfg, false)
	}
	if err == nil {
		cc := cluster.ClientConfig{Address: list, DialTimeout: f.timeout, Command: p.name(), TLS: rpcTLS}
		if h != nil {
			cc.Locate = h.Locate
		}
		var cl *cluster.Client
		if cl, err = cluster.Dial(ctx, cc); err == nil {
			tok, err := restToken(hooks.Config(cfg))
			if err != nil {
				cl.Close()
				if h != nil {
					h.Close()
				}
				return clusterClient{}, err
			}
			return clusterClient{Client: cl, ha: h, restTLS: restT, restToken: tok}, nil
		}
	}
	if h != nil {
		h.Close()
	}
	return clusterClient{}, err
}

// jobManagerList checks a --jobmanager value (one HOST:PORT or a
// comma-separated list) and returns what to dial: under high availability
// an unset --jobmanager is "" (etcd decides), not its default.
func jobManagerList(fs *pflag.FlagSet, value string, haEnabled bool) (string, error) {
	if haEnabled && !fs.Changed("jobmanager") {
		return "", nil
	}
	addrs, err := cluster.SplitAddresses(value)
	if err != nil {
		return "", Usagef("--jobmanager %q: want HOST:PORT or a list HOST:PORT,HOST:PORT,…, e.g. 127.0.0.1:6123", value)
	}
	if len(addrs) == 0 && !haEnabled {
		return "", Usagef("--jobmanager is empty: give the JobManager's rpc address HOST:PORT (or set %s, or high-availability.* with --config)", EnvName("jobmanager"))
	}
	return value, nil
}

// addressFlags are the addressing of the client commands (list, cancel,
// checkpoints, savepoint, stop): a cluster's JobManager by its rpc
// address, or a local run by its REST API.
type addressFlags struct {
	client clientFlags
	rest   string
	config configFlags
}

func (f *addressFlags) register(fs *pflag.FlagSet) {
	f.client.register(fs, "127.0.0.1:6123", jobManagerUsage+", for a job on a cluster")
	fs.StringVar(&f.rest, "rest-address", "", "the REST address HOST:PORT of a local run (run --rest-address), or of a JobManager, instead of --jobmanager")
	f.config.register(fs)
}

// jobManagerUsage describes --jobmanager on every command that has it.
const jobManagerUsage = "the JobManager's rpc address HOST:PORT, or a comma-separated list of several JobManagers' (high availability: the leader is found among them); with high-availability.type: etcd in --config/-D, etcd names the leader unless this flag is given"

// open connects to what the flags address.
func (f *addressFlags) open(ctx context.Context, fs *pflag.FlagSet, p *Program) (jobClient, error) {
	cfg, err := f.config.load()
	if err != nil {
		return nil, err
	}
	if f.rest == "" {
		cl, err := f.client.dial(ctx, p, fs, cfg)
		if err != nil {
			return nil, err
		}
		return cl, nil
	}
	if fs.Changed("jobmanager") {
		return nil, Usagef("give --jobmanager (a cluster) or --rest-address (a local run), not both")
	}
	if _, _, err := net.SplitHostPort(f.rest); err != nil {
		return nil, Usagef("--rest-address %q: want HOST:PORT, e.g. 127.0.0.1:8081", f.rest)
	}
	restT, err := restTLS(cfg, false)
	if err != nil {
		return nil, err
	}
	tok, err := restToken(hooks.Config(cfg))
	if err != nil {
		return nil, err
	}
	return newRESTClient(f.rest, tok).withTLS(restT), nil
}

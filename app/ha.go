package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/ha"
	"github.com/weirstream/weir/internal/hooks"
)

// haLeader is how a TaskManager or a client finds the leading JobManager
// under high availability (high-availability.type: etcd): Locate answers
// the leader's rpc address from etcd, LeaderTerms the terms etcd records.
// Close ends the etcd connection once the role or command is done.
type haLeader struct {
	Locate      func(ctx context.Context) ([]string, error)
	LeaderTerms func(ctx context.Context) <-chan int64
	Close       func() error
}

// connectHA connects to etcd when cfg asks for high availability; it
// returns nil (and no error) otherwise. Bad keys are usage errors naming
// the key; an etcd that does not answer is an error naming the endpoints.
func connectHA(ctx context.Context, cfg *weir.Config, log *slog.Logger) (*haLeader, error) {
	cli, hc, err := dialHA(ctx, hooks.Config(cfg), log, false)
	if cli == nil || err != nil {
		if err != nil && !errors.As(err, new(UsageError)) {
			err = fmt.Errorf("find the leading JobManager in etcd (%s): %w", config.HAEtcdEndpoints, err)
		}
		return nil, err
	}
	return leaderFromHA(cli, strings.Join(hc.Endpoints, ",")), nil
}

// dialHA reads the high-availability.* keys and connects to etcd; a nil
// client and no error without high availability. Bad keys are usage
// errors naming the key (a JobManager also needs
// high-availability.storageDir); an etcd that does not answer is
// ha.Connect's error naming the endpoints.
func dialHA(ctx context.Context, conf *config.Config, log *slog.Logger, jobManager bool) (*ha.Client, ha.Config, error) {
	hc, enabled, err := ha.FromConfig(conf)
	if err == nil && enabled && jobManager {
		err = hc.ValidateJobManager()
	}
	if err != nil {
		return nil, hc, Usagef("configuration: %v", err)
	}
	if !enabled {
		return nil, hc, nil
	}
	hc.Logger = log
	cli, err := ha.Connect(ctx, hc)
	return cli, hc, err
}

// leaderFromHA wires Locate and LeaderTerms to an etcd client; Close
// closes the client.
func leaderFromHA(cli *ha.Client, endpoints string) *haLeader {
	return &haLeader{
		Locate: func(ctx context.Context) ([]string, error) {
			info, err := cli.Leader(ctx)
			if err != nil {
				return nil, fmt.Errorf("etcd at %s: %w", endpoints, err)
			}
			if info.RPCAddress == "" {
				return nil, fmt.Errorf("etcd at %s: the leader %s (term %d) published no rpc address", endpoints, info.ID, info.Term)
			}
			return []string{info.RPCAddress}, nil
		},
		LeaderTerms: func(ctx context.Context) <-chan int64 {
			infos := cli.Observe(ctx)
			out := make(chan int64)
			go func() {
				defer close(out)
				for info := range infos { // closes when ctx ends
					if info.Term == 0 {
						continue // none leads: nothing to fence
					}
					select {
					case out <- info.Term:
					case <-ctx.Done():
						// Drain until Observe closes its channel.
					}
				}
			}()
			return out
		},
		Close: cli.Close,
	}
}

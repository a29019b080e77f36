package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// connect opens a connection to url that reconnects for ever: a server
// restart must not close the connection for good, or the task could only
// fail (a restart then reconnects, but a brief outage would cost a
// failover). Requests made while disconnected fail with their own
// timeout, which fails the operation in progress and only that.
func connect(ctx context.Context, url, name string, o options) (*natsgo.Conn, jetstream.JetStream, error) {
	opts := append([]natsgo.Option{
		natsgo.Name(name),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(100 * time.Millisecond),
		natsgo.RetryOnFailedConnect(false),
		natsgo.Timeout(5 * time.Second),
	}, slices.Clone(o.connOpts)...)
	type result struct {
		nc  *natsgo.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := natsgo.Connect(url, opts...)
		done <- result{nc, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// The dial gives up by its own timeout; close what it returns.
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, nil, ctx.Err()
	}
	if r.err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w (is the server running and the URL nats://HOST:PORT?)", url, r.err)
	}
	js, err := jetstream.New(r.nc)
	if err != nil {
		r.nc.Close()
		return nil, nil, fmt.Errorf("jetstream context on %s: %w", url, err)
	}
	return r.nc, js, nil
}

// streamInfo looks up stream, with an error that says how to create it.
func streamInfo(ctx context.Context, js jetstream.JetStream, stream string) (jetstream.Stream, *jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, fmt.Errorf("stream %q does not exist: create it first (nats stream add %s)", stream, stream)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up stream %q: %w", stream, err)
	}
	return s, s.CachedInfo(), nil
}

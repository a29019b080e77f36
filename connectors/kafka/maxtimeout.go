package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir"
)

// brokerMaxTimeoutKey is the broker setting that bounds the transaction
// timeout a producer may ask for.
const brokerMaxTimeoutKey = "transaction.max.timeout.ms"

// timeoutRefused turns the broker's INVALID_TRANSACTION_TIMEOUT, its answer
// to a producer asking for a transaction timeout above its
// transaction.max.timeout.ms, into an error that fails the job for good
// and names both settings (a restart would ask for the same timeout). It
// returns nil for any other error. The broker's limit is looked up for the
// message, best effort.
func (s *eoSink[T]) timeoutRefused(ctx context.Context, id string, err error) error {
	if !errors.Is(err, kerr.InvalidTransactionTimeout) {
		return nil
	}
	limit := "its value"
	if max, lerr := brokerMaxTimeout(ctx, s.admin); lerr == nil {
		limit = max.String()
	}
	return weir.Unrecoverable(fmt.Errorf("kafka sink %q: the broker refuses transactional id %s's transaction timeout: kafka.WithTransactionTimeout is %v, above the broker's %s (%s): raise %s on the brokers to at least %v, or lower kafka.WithTransactionTimeout to at most %s (it must still exceed the checkpoint interval, timeout and restart delay): %w",
		s.uid, id, s.o.txnTimeout, brokerMaxTimeoutKey, limit, brokerMaxTimeoutKey, s.o.txnTimeout, limit, err))
}

// brokerMaxTimeout asks a broker for its transaction.max.timeout.ms
// (DescribeConfigs of the first broker in the metadata, by its node id:
// an empty name would return only the cluster's dynamic defaults). Every
// broker of a cluster is expected to agree.
func brokerMaxTimeout(ctx context.Context, cl *kgo.Client) (time.Duration, error) {
	if cl == nil {
		return 0, errors.New("no client")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(md.Brokers) == 0 {
		return 0, errors.New("no broker in the metadata")
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = strconv.Itoa(int(md.Brokers[0].NodeID))
	res.ConfigNames = []string{brokerMaxTimeoutKey}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return 0, err
		}
		for _, c := range r.Configs {
			if c.Name == brokerMaxTimeoutKey && c.Value != nil {
				ms, err := strconv.ParseInt(*c.Value, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s = %q: %w", brokerMaxTimeoutKey, *c.Value, err)
				}
				return time.Duration(ms) * time.Millisecond, nil
			}
		}
	}
	return 0, fmt.Errorf("no %s in the broker's configs", brokerMaxTimeoutKey)
}

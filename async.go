package weir

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/asyncqueue"
	"github.com/weirstream/weir/internal/dataflow"
)

// AsyncFunc calls an external service (a database lookup, an HTTP
// enrichment) for one record and returns the record's result. weir runs
// it on goroutines it manages, up to the operator's capacity at a time,
// so it may block; ctx is cancelled when the call times out
// (WithAsyncTimeout) or the task is cancelled, and the function must return
// soon after. To fall back instead of failing on a timeout, return a
// value and a nil error once ctx is done.
//
// call identifies the call: a service that deduplicates by
// call.IdempotencyKey applies each record once, even though weir calls
// again after a retry or a restore.
type AsyncFunc[T, U any] func(ctx context.Context, in T, call AsyncCall) (U, error)

// AsyncCall describes one call of an AsyncFunc.
type AsyncCall struct {
	// IdempotencyKey names the record's call, as
	// "job/operator-uid/subtask/run/seq": the same for every try of the
	// call (retries), and for the re-issued call of a record that was in
	// flight at a checkpoint the job restored, so a service can apply
	// such a call once. run is random per attempt of a subtask: a record
	// replayed after a restore (one the checkpoint did not hold in
	// flight) gets a new key, because its subtask may see its input in
	// another order than the failed attempt did (several partitions or
	// channels, another parallelism), and a key reused for another
	// record would make a deduplicating service answer for the wrong
	// one. A key never names two records.
	IdempotencyKey string
	// Subtask and Seq are the parts of the key that identify the record:
	// the subtask that first received it and its sequence number there.
	Subtask int
	Seq     uint64
	// Attempt counts the tries of this call, from 1 (retries add one; a
	// restore starts again at 1).
	Attempt int
}

// ErrAsyncTimeout is matched (errors.Is) by the failure of a task whose
// async call did not complete within its WithAsyncTimeout.
var ErrAsyncTimeout = errors.New("async call timed out")

// AsyncRetryPolicy retries failed async calls (Flink's FLIP-232): after a
// failed attempt that RetryIf accepts, weir waits the backoff and calls
// again, up to MaxAttempts tries in all, within the call's WithAsyncTimeout.
type AsyncRetryPolicy struct {
	// MaxAttempts is the number of tries, first one included (at least 1).
	MaxAttempts int
	// Backoff is the wait before the first retry; each further one waits
	// Multiplier times longer (1 or less: a fixed delay), at most
	// MaxBackoff when that is set.
	Backoff    time.Duration
	Multiplier float64
	MaxBackoff time.Duration
	// RetryIf reports whether a failed attempt's error is worth another
	// try; nil retries every error.
	RetryIf func(error) bool
}

// delay is the wait before attempt (2, 3, …).
func (p *AsyncRetryPolicy) delay(attempt int) time.Duration {
	d := p.Backoff
	for i := 2; i < attempt && p.Multiplier > 1; i++ {
		d = time.Duration(float64(d) * p.Multiplier)
		if p.MaxBackoff > 0 && d >= p.MaxBackoff {
			break
		}
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d
}

// AsyncOption configures AsyncMap and AsyncMapKeyed (WithAsyncCapacity,
// WithAsyncTimeout, WithAsyncRetry, WithAsyncUnordered).
type AsyncOption struct {
	apply func(*asyncConfig)
}

type asyncConfig struct {
	capacity int
	timeout  time.Duration
	retry    AsyncRetryPolicy
	mode     asyncqueue.Mode
	err      error
}

// DefaultAsyncCapacity is the in-flight bound per subtask without
// WithAsyncCapacity (Flink's default too).
const DefaultAsyncCapacity = 100

// WithAsyncCapacity bounds the calls in flight per subtask (default
// DefaultAsyncCapacity). With n in flight the operator takes no more
// input until one completes: backpressure, never more memory.
func WithAsyncCapacity(n int) AsyncOption {
	return AsyncOption{func(c *asyncConfig) {
		if n < 1 {
			c.err = fmt.Errorf("WithAsyncCapacity(%d): want at least 1 call in flight", n)
		}
		c.capacity = n
	}}
}

// WithAsyncTimeout bounds each record's call, retries included (default: no
// bound). A call that times out fails the task with ErrAsyncTimeout,
// unless the function returns a fallback result.
func WithAsyncTimeout(d time.Duration) AsyncOption {
	return AsyncOption{func(c *asyncConfig) {
		if d < 0 {
			c.err = fmt.Errorf("WithAsyncTimeout(%v): want a positive duration, or 0 for no timeout", d)
		}
		c.timeout = d
	}}
}

// WithAsyncRetry retries failed calls as p says (default: no retries; a
// failed call fails the task).
func WithAsyncRetry(p AsyncRetryPolicy) AsyncOption {
	return AsyncOption{func(c *asyncConfig) {
		if p.MaxAttempts < 1 || p.Backoff < 0 || p.MaxBackoff < 0 {
			c.err = fmt.Errorf("WithAsyncRetry: MaxAttempts %d, Backoff %v, MaxBackoff %v: want at least 1 attempt and no negative wait", p.MaxAttempts, p.Backoff, p.MaxBackoff)
		}
		c.retry = p
	}}
}

// WithAsyncUnordered emits each result as soon as its call completes
// (Flink's unorderedWait), for more throughput when calls vary in
// latency. Watermarks stay fences: no result crosses one, so event time
// downstream stays correct. The default is input order.
func WithAsyncUnordered() AsyncOption {
	return AsyncOption{func(c *asyncConfig) { c.mode = asyncqueue.Unordered }}
}

func newAsyncConfig(opts []AsyncOption) asyncConfig {
	c := asyncConfig{capacity: DefaultAsyncCapacity, retry: AsyncRetryPolicy{MaxAttempts: 1}}
	for _, o := range opts {
		if o.apply != nil { // the zero AsyncOption changes nothing
			o.apply(&c)
		}
	}
	return c
}

// AsyncMap calls f for every record, up to the capacity at a time, and
// emits its results, in input order (or as they complete, with
// WithAsyncUnordered). It is exactly-once: the records in flight at a
// checkpoint are part of it (operator state) and their calls are issued
// again after a restore, with the same AsyncCall.IdempotencyKey. A call
// that fails (after its retries) or times out fails the task. Records
// keep their timestamps; watermarks wait for the records before them.
// The operator chains like Map; records and in-flight state must be
// types weir's codec encodes.
func AsyncMap[T, U any](s Stream[T], f AsyncFunc[T, U], opts ...AsyncOption) Stream[U] {
	cfg := newAsyncConfig(opts)
	if cfg.err != nil {
		s.env.fail(fmt.Errorf("AsyncMap after %q: %w", s.node.Name, cfg.err))
	}
	n := newNode[U](s.env, "AsyncMap", forward(s.node), func(int) dataflow.Operator {
		return newAsyncOp(f, cfg, nil)
	})
	inputFactory[T](n)
	return Stream[U]{env: s.env, node: n}
}

// AsyncMapKeyed is AsyncMap on a keyed stream that emits the results of
// one key in input order and those of different keys as they complete
// (watermarks stay fences). The operator does not chain: the stream is
// partitioned by key.
func AsyncMapKeyed[K comparable, T, U any](k Keyed[K, T], f AsyncFunc[T, U], opts ...AsyncOption) Stream[U] {
	cfg := newAsyncConfig(opts)
	if cfg.err != nil {
		k.s.env.fail(fmt.Errorf("AsyncMapKeyed after %q: %w", k.s.node.Name, cfg.err))
	}
	cfg.mode = asyncqueue.OrderedPerKey
	edges := []dataflow.Edge{{From: k.s.node.ID, Partition: dataflow.Hash, KeyHash: k.recordHash()}}
	keyOf := func(v T) uint64 { return uint64(k.hash(k.key(v))) }
	n := newNode[U](k.s.env, "AsyncMapKeyed", edges, func(int) dataflow.Operator {
		return newAsyncOp(f, cfg, keyOf)
	})
	inputFactory[T](n)
	return Stream[U]{env: k.s.env, node: n}
}

package ha

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxOpsPerTxn keeps a transaction under etcd's default --max-txn-ops
// (128), with room for the fence.
const maxOpsPerTxn = 100

// fence is the condition of every write of this term: its election key
// still exists with the create revision that is the term. An expired or
// revoked lease deletes the key (its CreateRevision reads 0), and a later
// term has another key, so a deposed leader's writes fail the compare.
func (l *Leadership) fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.info.Term)
}

// write commits ops in one transaction fenced by the term. what names the
// operation for errors. A compare failure ends the term locally (Done
// closes) and returns an error wrapping ErrNotLeader. Any other error is
// ambiguous: the write may or may not have been applied.
func (l *Leadership) write(ctx context.Context, what string, ops ...clientv3.Op) error {
	if l.lost() {
		return fmt.Errorf("ha: %s: %w", what, l.notLeader())
	}
	resp, err := l.c.cli.Txn(ctx).If(l.fence()).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("ha: %s (term %d): %w", what, l.info.Term, err)
	}
	if !resp.Succeeded {
		l.lose("a fenced write found the election key of this term gone")
		return fmt.Errorf("ha: %s: %w", what, l.notLeader())
	}
	return nil
}

// SaveJob stores a job's record under <root>/jobs/<name>, replacing any
// earlier one. Keep records small (etcd refuses requests above 1.5 MiB by
// default): large data belongs in StorageDir, with its path here.
func (l *Leadership) SaveJob(ctx context.Context, name string, record []byte) error {
	what := fmt.Sprintf("save job %s", name)
	if err := checkName(name); err != nil {
		return fmt.Errorf("ha: %s: %w", what, err)
	}
	return l.write(ctx, what, clientv3.OpPut(l.c.keys.job(name), string(record)))
}

// DeleteJob removes a job's record; removing an absent one is no error.
func (l *Leadership) DeleteJob(ctx context.Context, name string) error {
	what := fmt.Sprintf("delete job %s", name)
	if err := checkName(name); err != nil {
		return fmt.Errorf("ha: %s: %w", what, err)
	}
	return l.write(ctx, what, clientv3.OpDelete(l.c.keys.job(name)))
}

// Jobs returns every stored job record by name.
func (c *Client) Jobs(ctx context.Context) (map[string][]byte, error) {
	pfx := c.keys.jobsPrefix()
	resp, err := c.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("ha: read jobs: %w", err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		name, err := unescapeName(string(kv.Key[len(pfx):]))
		if err != nil {
			return nil, fmt.Errorf("ha: read jobs: key %q: %w", kv.Key, err)
		}
		out[name] = kv.Value
	}
	return out, nil
}

// RegisteredCheckpoint is a completed checkpoint's pointer: its id and the
// path of its metadata (or folder) in checkpoint storage.
type RegisteredCheckpoint struct {
	ID   int64
	Path string
}

// RegisterCheckpoint records that checkpoint id of job is complete, with
// the path of its metadata: the moment it becomes complete under HA.
// Registering an id again replaces its path.
func (l *Leadership) RegisterCheckpoint(ctx context.Context, job string, id int64, path string) error {
	what := fmt.Sprintf("register checkpoint %d of job %s", id, job)
	if err := checkName(job); err != nil {
		return fmt.Errorf("ha: %s: %w", what, err)
	}
	if id < 0 {
		return fmt.Errorf("ha: %s: negative checkpoint id", what)
	}
	return l.write(ctx, what, clientv3.OpPut(l.c.keys.checkpoint(job, id), path))
}

// UnregisterCheckpoints removes the pointers of ids (subsumed or
// discarded checkpoints); absent ids are no error. More than 100 ids are
// removed in several transactions, each fenced.
func (l *Leadership) UnregisterCheckpoints(ctx context.Context, job string, ids []int64) error {
	what := fmt.Sprintf("unregister checkpoints %v of job %s", ids, job)
	if err := checkName(job); err != nil {
		return fmt.Errorf("ha: %s: %w", what, err)
	}
	for chunk := range slices.Chunk(ids, maxOpsPerTxn) {
		ops := make([]clientv3.Op, 0, len(chunk))
		for _, id := range chunk {
			if id < 0 {
				return fmt.Errorf("ha: %s: negative checkpoint id %d", what, id)
			}
			ops = append(ops, clientv3.OpDelete(l.c.keys.checkpoint(job, id)))
		}
		if err := l.write(ctx, what, ops...); err != nil {
			return err
		}
	}
	return nil
}

// DropCheckpoints removes every checkpoint pointer of job (a job that
// ended for good). Its checkpoint id counter stays, so a later job of the
// same name never reuses an id.
func (l *Leadership) DropCheckpoints(ctx context.Context, job string) error {
	what := fmt.Sprintf("drop the checkpoints of job %s", job)
	if err := checkName(job); err != nil {
		return fmt.Errorf("ha: %s: %w", what, err)
	}
	return l.write(ctx, what, clientv3.OpDelete(l.c.keys.checkpointsPrefix(job), clientv3.WithPrefix()))
}

// Checkpoints returns the registered checkpoints of job, ascending by ID.
func (c *Client) Checkpoints(ctx context.Context, job string) ([]RegisteredCheckpoint, error) {
	what := fmt.Sprintf("read the checkpoints of job %s", job)
	if err := checkName(job); err != nil {
		return nil, fmt.Errorf("ha: %s: %w", what, err)
	}
	pfx := c.keys.checkpointsPrefix(job)
	resp, err := c.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("ha: %s: %w", what, err)
	}
	out := make([]RegisteredCheckpoint, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err := parseCheckpointKey(pfx, string(kv.Key))
		if err != nil {
			return nil, fmt.Errorf("ha: %s: %w", what, err)
		}
		out = append(out, RegisteredCheckpoint{ID: id, Path: string(kv.Value)})
	}
	// Zero-padded ids sort as numbers already; this keeps it true for
	// anything written by hand.
	slices.SortFunc(out, func(a, b RegisteredCheckpoint) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ReserveCheckpointIDs raises the job's checkpoint id counter to upTo
// (never lowers it) and returns the stored bound, which is ≥ upTo. A
// leader reserves ids before it uses them, and a new leader starts above
// the bound, so ids never repeat across leaders. Asking for a bound at
// or below the stored one writes nothing but still proves leadership.
func (l *Leadership) ReserveCheckpointIDs(ctx context.Context, job string, upTo int64) (int64, error) {
	what := fmt.Sprintf("reserve checkpoint ids up to %d of job %s", upTo, job)
	if err := checkName(job); err != nil {
		return 0, fmt.Errorf("ha: %s: %w", what, err)
	}
	key := l.c.keys.counter(job)
	// Read-modify-write: the transaction also compares the counter's
	// ModRevision with the read, so two writers of one term (or a
	// counter changed by hand) cannot lower it; a lost race reads again.
	resp, err := l.c.cli.Get(ctx, key)
	for {
		if err != nil {
			return 0, fmt.Errorf("ha: %s (term %d): %w", what, l.info.Term, err)
		}
		if l.lost() {
			return 0, fmt.Errorf("ha: %s: %w", what, l.notLeader())
		}
		cur, modRev, perr := parseCounter(resp.Kvs)
		if perr != nil {
			return 0, fmt.Errorf("ha: %s: %w", what, perr)
		}
		bound := max(cur, upTo)
		var then []clientv3.Op
		if bound != cur {
			then = append(then, clientv3.OpPut(key, strconv.FormatInt(bound, 10)))
		}
		tresp, terr := l.c.cli.Txn(ctx).
			If(l.fence(), clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(then...).
			Else(clientv3.OpGet(l.key), clientv3.OpGet(key)).
			Commit()
		if terr != nil {
			return 0, fmt.Errorf("ha: %s (term %d): %w", what, l.info.Term, terr)
		}
		if tresp.Succeeded {
			return bound, nil
		}
		if lk := tresp.Responses[0].GetResponseRange().Kvs; len(lk) != 1 || lk[0].CreateRevision != l.info.Term {
			l.lose("a fenced write found the election key of this term gone")
			return 0, fmt.Errorf("ha: %s: %w", what, l.notLeader())
		}
		resp, err = (*clientv3.GetResponse)(tresp.Responses[1].GetResponseRange()), nil
	}
}

// CheckpointIDBound returns the job's checkpoint id counter, 0 if none.
func (c *Client) CheckpointIDBound(ctx context.Context, job string) (int64, error) {
	what := fmt.Sprintf("read the checkpoint id counter of job %s", job)
	if err := checkName(job); err != nil {
		return 0, fmt.Errorf("ha: %s: %w", what, err)
	}
	resp, err := c.cli.Get(ctx, c.keys.counter(job))
	if err != nil {
		return 0, fmt.Errorf("ha: %s: %w", what, err)
	}
	n, _, err := parseCounter(resp.Kvs)
	if err != nil {
		return 0, fmt.Errorf("ha: %s: %w", what, err)
	}
	return n, nil
}

package ha

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// keys is the key layout of one cluster (see the package doc).
type keys struct {
	root string // "/weir/default"
}

func newKeys(clusterID string) (keys, error) {
	id, err := normalizeClusterID(clusterID)
	if err != nil {
		return keys{}, err
	}
	// The id is one path segment in etcd, escaped: a nested id like
	// "/a/leader" must not put its keys under the prefixes of cluster
	// "/a" ("/weir/a/leader/…" is cluster /a's election).
	return keys{root: "/weir/" + url.PathEscape(id[1:])}, nil
}

// leaderPrefix is the election prefix; concurrency.Election appends "/"
// and the lease id in hex.
func (k keys) leaderPrefix() string { return k.root + "/leader" }

func (k keys) jobsPrefix() string { return k.root + "/jobs/" }

func (k keys) job(name string) string { return k.jobsPrefix() + escapeName(name) }

func (k keys) checkpointsPrefix(job string) string {
	return k.root + "/checkpoints/" + escapeName(job) + "/"
}

func (k keys) checkpoint(job string, id int64) string {
	return k.checkpointsPrefix(job) + fmt.Sprintf("%020d", id)
}

func (k keys) counter(job string) string { return k.root + "/checkpoint-counter/" + escapeName(job) }

// escapeName makes a job name one key segment: "/" and "%" (and anything
// else outside URL path characters) are %-escaped, so no name reaches
// outside its prefix or equals another name's prefix. Job names are
// already refused with a "/" (deployment.ValidateJobName); this holds even
// if that rule changes.
func escapeName(name string) string { return url.PathEscape(name) }

func unescapeName(seg string) (string, error) { return url.PathUnescape(seg) }

// checkName refuses the one name escaping cannot make a key of.
func checkName(name string) error {
	if name == "" {
		return errors.New("job name is empty")
	}
	return nil
}

// parseCheckpointKey returns the id of a key under checkpointsPrefix.
func parseCheckpointKey(prefix, key string) (int64, error) {
	s, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, fmt.Errorf("key %q is not under %q", key, prefix)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("key %q does not end in a checkpoint id", key)
	}
	return id, nil
}

// parseCounter reads a checkpoint id counter: its value (0 when absent)
// and ModRevision (0 when absent, which is what a Compare on an absent
// key sees).
func parseCounter(kvs []*mvccpb.KeyValue) (n, modRev int64, err error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	n, err = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("counter %s holds %q, not a decimal id", kvs[0].Key, kvs[0].Value)
	}
	return n, kvs[0].ModRevision, nil
}

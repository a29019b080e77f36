// Package ha is JobManager high availability on etcd: leader election
// with a leased term, leader retrieval, and the recovery metadata a new
// leader needs — the job store, the completed-checkpoint store (pointers
// to retained checkpoints' metadata) and the checkpoint id counter — all
// written only under the current leader's fence. It is Flink's
// HighAvailabilityServices on etcd.
//
// # Walkthrough
//
//	c, err := ha.Connect(ctx, cfg)           // checks etcd answers within DialTimeout
//	l, err := c.Campaign(ctx, ha.LeaderInfo{ID: id, RPCAddress: rpc, RESTAddress: rest})
//	// lead: l.Term() is the fencing token for RPCs to TaskManagers
//	n, err := l.ReserveCheckpointIDs(ctx, job, next+100)
//	err = l.RegisterCheckpoint(ctx, job, 7, path) // checkpoint 7 is now complete
//	<-l.Done()                                 // lease lost: stop acting, campaign again
//
// Standbys block in Campaign; TaskManagers and clients use Leader or
// Observe. Every process needs its own Client; Close resigns what it
// leads, so a graceful shutdown hands over at once.
//
// # Keys
//
// root is "/weir/" + the cluster id without its leading slash, escaped as
// one segment ("/default" → "/weir/default", "/a/b" → "/weir/a%2Fb"), so
// clusters never see each other's keys. Job names are escaped the same
// way (url.PathEscape), so no name reaches outside its prefix.
//
//	<root>/leader/<lease id, hex>                     candidates; the first created leads (concurrency.Election);
//	                                                  value: LeaderInfo JSON; attached to the candidate's lease
//	<root>/jobs/<job>                                 the job's record (small: a pointer into StorageDir)
//	<root>/checkpoints/<job>/<id, 20 digits>          a completed checkpoint: the path of its metadata
//	<root>/checkpoint-counter/<job>                   decimal bound of the job's reserved checkpoint ids
//
// # Terms and the fence
//
// A term is one Leadership. Its number, Term, is the create revision of
// its election key: etcd revisions only grow, so every later term has a
// larger number, and TaskManagers can refuse an older one.
//
// The fencing rule: a write is accepted only while the election key of
// this term exists. Every write of a Leadership is one etcd transaction
// conditioned on Compare(CreateRevision(electionKey), "=", term). The key
// is attached to the term's lease, so an expired or revoked lease deletes
// it (a missing key's CreateRevision is 0) and a paused, partitioned or
// deposed leader cannot register a checkpoint, whatever it believes.
// Refused writes wrap ErrNotLeader. Any other write error is ambiguous:
// the write may have been applied (etcd transactions are not retried).
//
// Done closes when the term ends locally: lease revoked or expired, no
// renewal for the lease TTL minus a margin (so it normally closes before
// etcd can expire the lease and elect another), the key deleted, a
// refused write, Resign or Close. Done is the signal to stop acting; the
// fence, not Done, is the guarantee.
//
// Reads (Jobs, Checkpoints, CheckpointIDBound, Leader) are linearizable
// Gets and need no leadership.
//
// # What it does not do
//
// It does not touch StorageDir (it only carries its name), does not
// decide when a checkpoint is complete or which to retain, and owns no
// state beyond the keys above: the JobManager drives it. It never
// imports the etcd server; tests run one from internal/ha/etcdtest.
//
// # Goroutines
//
// A Client runs the etcd client's goroutines, one monitor per live
// Leadership (plus the session's keepalive reader), one per Observe
// channel, and briefly one per Campaign. Close ends them all and waits.
// Every blocking call takes a context: while etcd is unreachable, etcd
// calls wait for it until their context ends.
package ha

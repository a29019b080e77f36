package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// High availability, the TaskManagers' and clients' side: several
// JobManagers run, one leads (elected in etcd, internal/ha) and the others
// stand by. TaskManagers and clients are given candidate addresses (a
// comma-separated --jobmanager list, or a Locate function that asks etcd)
// and follow the leader:
//
//   - a standby refuses a TaskManager's Register with the transient
//     REJECT_CAUSE_NOT_LEADER naming the leader; the TaskManager tries that
//     address next;
//   - a standby answers every client RPC with FailedPrecondition and the
//     leader's rpc address in the LeaderRPCHeader response header
//     (Unavailable and no address when it knows no leader); the client
//     redials the leader and retries the call once;
//   - every JobManager message carries the sender's leader term as its
//     fencing token; a TaskManager drops a session whose term is older
//     than the newest it has seen (ErrStaleLeader), and ends its session
//     at once when LeaderTerms reports a newer term (ErrNewLeader).

// LeaderRPCHeader is the response header (a trailer is read too) in which
// a standby JobManager names the leader's rpc address, HOST:PORT, when it
// refuses a client RPC with FailedPrecondition. It is absent or empty when
// the standby knows no leader; the status is then Unavailable.
const LeaderRPCHeader = "weir-leader-rpc"

// StandbyHeader is the response header in which a standby JobManager
// names itself (its id) when it refuses a client RPC. With it a client
// tells a standby's Unavailable (no leader known) from a JobManager that
// is down; LeaderRPCHeader alone suffices when a leader is known.
const StandbyHeader = "weir-standby"

// ErrNotLeader is wrapped by a client's error when the JobManagers it
// reached are standbys and none of them led the cluster.
var ErrNotLeader = errors.New("JobManager is not the leader")

// ErrStaleLeader ends a TaskManager's session (the reason given to
// Handler.Disconnected) when its JobManager sent a message of an older
// leader term than the newest the TaskManager has seen: that JobManager
// was deposed (paused, partitioned) and must not be obeyed.
var ErrStaleLeader = errors.New("message from a deposed leader")

// ErrNewLeader ends a TaskManager's session when LeaderTerms reports a
// leader term newer than the session's: the TaskManager cancels its tasks
// and registers with the new leader instead of waiting for
// heartbeat.timeout.
var ErrNewLeader = errors.New("a new leader was elected")

// locator returns the rpc addresses of candidate JobManagers, best first
// (under high availability: the leader recorded in etcd). An error means
// none is known now; the caller tries its static addresses, if any, and
// asks again later.
type locator = func(ctx context.Context) ([]string, error)

// NotLeader is what a standby JobManager answers a client RPC with: it
// sets StandbyHeader and LeaderRPCHeader on the response and returns the
// status, FailedPrecondition naming the leader, or Unavailable when
// leaderAddr is empty. self and selfAddr name the standby; term is the
// leader's term (0 if unknown).
func NotLeader(ctx context.Context, self, selfAddr, leaderID, leaderAddr string, term int64) error {
	md := metadata.Pairs(StandbyHeader, self)
	if leaderAddr != "" {
		md.Append(LeaderRPCHeader, leaderAddr)
	}
	_ = grpc.SetHeader(ctx, md)
	if leaderAddr == "" {
		return status.Errorf(codes.Unavailable, "JobManager %s at %s is a standby and knows no leader (an election is under way, or no other JobManager runs)", self, selfAddr)
	}
	t := ""
	if term > 0 {
		t = fmt.Sprintf(" (term %d)", term)
	}
	return status.Errorf(codes.FailedPrecondition, "JobManager %s at %s is a standby; the leader is %s at %s%s", self, selfAddr, leaderID, leaderAddr, t)
}

// standbyAnswer reports whether err, with the response metadata of its
// call, is a standby's refusal, and the leader it names ("" if none).
func standbyAnswer(err error, mds ...metadata.MD) (leader string, standby bool) {
	code := status.Code(err)
	if code != codes.FailedPrecondition && code != codes.Unavailable {
		return "", false
	}
	for _, md := range mds {
		if v := md.Get(LeaderRPCHeader); len(v) > 0 && v[0] != "" && leader == "" {
			leader = v[0]
		}
		if len(md.Get(StandbyHeader)) > 0 {
			standby = true
		}
	}
	if leader != "" {
		return leader, true
	}
	return "", standby
}

// SplitAddresses splits a comma-separated --jobmanager list into its
// addresses, trimming spaces and dropping empty items, and checks that
// each is HOST:PORT.
func SplitAddresses(list string) ([]string, error) {
	var out []string
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("JobManager address %q: want HOST:PORT, e.g. 127.0.0.1:6123", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// appendNew appends the addresses of add that are not in list yet.
func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if a != "" && !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}

// candidates returns the addresses to try in one round: hint, what locate
// answers, then static, without repeats. locErr is locate's error, if any.
func candidates(ctx context.Context, locate locator, static []string, hint string) (addrs []string, locErr error) {
	addrs = appendNew(addrs, hint)
	if locate != nil {
		found, err := locate(ctx)
		if err != nil {
			locErr = err
		}
		addrs = appendNew(addrs, found...)
	}
	return appendNew(addrs, static...), locErr
}

// joinAddresses renders "a", "a or b", "a, b or c".
func joinAddresses(addrs []string) string {
	switch len(addrs) {
	case 0:
		return "(none)"
	case 1:
		return addrs[0]
	}
	return strings.Join(addrs[:len(addrs)-1], ", ") + " or " + addrs[len(addrs)-1]
}

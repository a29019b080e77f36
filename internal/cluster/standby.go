package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// standbyServer answers on a standby JobManager's rpc port: it runs no
// job and takes no TaskManager, and says who leads. A TaskManager's
// Register gets the transient NOT_LEADER rejection with the leader's
// address; a client call gets NotLeader's answer (FailedPrecondition with
// the leader in LeaderRPCHeader, Unavailable while no leader is known).
type standbyServer struct {
	pb.UnimplementedJobManagerServer
	self   LeaderInfo
	leader func() LeaderInfo
	log    *slog.Logger
	srv    *grpc.Server
	done   chan struct{}
}

// serveStandby serves ln until stop.
func serveStandby(ln net.Listener, self LeaderInfo, leader func() LeaderInfo, t *TLS, log *slog.Logger) *standbyServer {
	s := &standbyServer{self: self, leader: leader, log: log, done: make(chan struct{})}
	opts := append(VersionServerOptions(), grpc.MaxRecvMsgSize(maxMessageSize))
	s.srv = grpc.NewServer(append(opts, serverTLSOption(t, log)...)...)
	pb.RegisterJobManagerServer(s.srv, s)
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// stop ends the server and its connections; callers reconnect and find
// the leader again.
func (s *standbyServer) stop() {
	s.srv.Stop()
	<-s.done
}

// describe says who this JobManager is and who leads.
func (s *standbyServer) describe() (LeaderInfo, string) {
	l := s.leader()
	if l.Term == 0 {
		return l, fmt.Sprintf("JobManager %s at %s is a standby and no leader is elected yet: wait a lease period (high-availability.etcd.lease-ttl), or check that etcd is reachable", s.self.ID, s.self.RPCAddress)
	}
	return l, fmt.Sprintf("JobManager %s at %s is a standby; the leader is %s at %s (term %d)", s.self.ID, s.self.RPCAddress, l.ID, l.RPCAddress, l.Term)
}

func (s *standbyServer) notLeader(ctx context.Context) error {
	l := s.leader()
	if l.Term == 0 {
		l = LeaderInfo{}
	}
	return NotLeader(ctx, s.self.ID, s.self.RPCAddress, l.ID, l.RPCAddress, l.Term)
}

func (s *standbyServer) Connect(stream grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	l, msg := s.describe()
	s.log.Debug("TaskManager sent to the leader", "tm", first.GetRegister().GetResourceId(), "leader", l.RPCAddress)
	return stream.Send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Rejected{Rejected: &pb.Rejected{
		Cause: pb.RejectCause_REJECT_CAUSE_NOT_LEADER, Reason: msg, LeaderRpcAddress: l.RPCAddress,
	}}})
}

func (s *standbyServer) Submit(ctx context.Context, _ *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	return nil, s.notLeader(ctx)
}

func (s *standbyServer) Wait(_ *pb.WaitRequest, stream grpc.ServerStreamingServer[pb.JobUpdate]) error {
	return s.notLeader(stream.Context())
}

func (s *standbyServer) List(ctx context.Context, _ *pb.ListRequest) (*pb.ListResponse, error) {
	return nil, s.notLeader(ctx)
}

func (s *standbyServer) Cancel(ctx context.Context, _ *pb.CancelRequest) (*pb.CancelResponse, error) {
	return nil, s.notLeader(ctx)
}

func (s *standbyServer) Checkpoints(ctx context.Context, _ *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	return nil, s.notLeader(ctx)
}

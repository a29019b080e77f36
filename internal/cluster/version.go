package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// ProtocolVersion is the version of the control-plane schema
// (pb/cluster.proto) this build speaks. Bump it for any change an older
// peer would misread; peers of different versions refuse each other.
const ProtocolVersion = 2

// ProtocolMetadataKey is the gRPC metadata key under which clients send
// their ProtocolVersion.
const ProtocolMetadataKey = "weir-protocol"

// BuildIDOf returns the build id of the executable at path: the hex sha256
// of its bytes. User code is compiled into the binary, so two processes of
// one cluster must have the same build id.
func BuildIDOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("build id: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ExecutableBuildID returns the build id of the running executable.
// Processes call it once at start and put the result into their
// configuration; tests inject a made-up id instead.
func ExecutableBuildID() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("build id: locate the executable: %w", err)
	}
	return BuildIDOf(exe)
}

// shortBuild abbreviates a build id for messages; 12 hex digits tell
// builds apart as well as git's short hashes do.
func shortBuild(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// checkRegister returns why a TaskManager's Register must be refused, or
// nil.
func checkRegister(r *pb.Register, buildID string) *pb.Rejected {
	switch {
	case r.GetProtocolVersion() != ProtocolVersion:
		return &pb.Rejected{Cause: pb.RejectCause_REJECT_CAUSE_PROTOCOL_VERSION, Reason: fmt.Sprintf(
			"TaskManager speaks cluster protocol %d, this JobManager %d: run the same weir build in every role",
			r.GetProtocolVersion(), ProtocolVersion)}
	case r.GetBuildId() != buildID:
		return &pb.Rejected{Cause: pb.RejectCause_REJECT_CAUSE_BUILD_ID, Reason: fmt.Sprintf(
			"TaskManager runs build %s, this JobManager build %s: run the same weir build in every role",
			shortBuild(r.GetBuildId()), shortBuild(buildID))}
	case r.GetSlots() == 0:
		return &pb.Rejected{Cause: pb.RejectCause_REJECT_CAUSE_NO_SLOTS,
			Reason: "TaskManager offers 0 slots: start it with --slots 1 or more"}
	case r.GetResourceId() == "":
		return &pb.Rejected{Cause: pb.RejectCause_REJECT_CAUSE_BAD_REGISTER,
			Reason: "TaskManager sent no resource id: it is not a weir TaskManager of this build"}
	}
	return nil
}

// versionClientOptions returns the dial options that send
// ProtocolMetadataKey with every call. version is ProtocolVersion except in
// tests of the refusal.
func versionClientOptions(version int) []grpc.DialOption {
	v := strconv.Itoa(version)
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, ProtocolMetadataKey, v), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, ProtocolMetadataKey, v), desc, cc, method, opts...)
		}),
	}
}

// VersionClientOptions returns the dial options every client of a
// JobManager uses: they send this build's ProtocolVersion as metadata.
func VersionClientOptions() []grpc.DialOption { return versionClientOptions(ProtocolVersion) }

// VersionServerOptions returns the server options that refuse a call whose
// ProtocolVersion differs from this build's with FailedPrecondition. The
// Connect stream is exempt: its Register carries the version, and the
// refusal comes back as a Rejected message naming the TaskManager.
func VersionServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := checkVersion(ctx); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if info.FullMethod != pb.JobManager_Connect_FullMethodName {
				if err := checkVersion(ss.Context()); err != nil {
					return err
				}
			}
			return handler(srv, ss)
		}),
	}
}

// checkVersion compares the caller's ProtocolMetadataKey with this
// build's. A caller without one is not a weir client of any version.
func checkVersion(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vs := md.Get(ProtocolMetadataKey)
	if len(vs) == 0 {
		return status.Errorf(codes.FailedPrecondition,
			"client sent no %s metadata, this JobManager speaks cluster protocol %d: use a weir client of the same build", ProtocolMetadataKey, ProtocolVersion)
	}
	if vs[0] != strconv.Itoa(ProtocolVersion) {
		return status.Errorf(codes.FailedPrecondition,
			"client speaks cluster protocol %s, this JobManager %d: run the same weir build in every role", vs[0], ProtocolVersion)
	}
	return nil
}

package cluster

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/ha"
)

// TestSubmitErrorLostLeadership: a submission whose record write was
// refused because the term ended answers Unavailable, which a client with
// several JobManagers follows to the next leader; other failures stay the
// submission's own.
func TestSubmitErrorLostLeadership(t *testing.T) {
	lost := fmt.Errorf("save job demo in etcd: %w", fmt.Errorf("term 2 is over: %w", ha.ErrNotLeader))
	if c := status.Code(submitError("demo", lost)); c != codes.Unavailable {
		t.Errorf("lost leadership: code %s, want Unavailable", c)
	}
	if c := status.Code(submitError("demo", errors.New("bad --parallelism"))); c != codes.InvalidArgument {
		t.Errorf("bad spec: code %s, want InvalidArgument", c)
	}
}

package stateproc

import (
	"testing"

	"github.com/weirstream/weir/internal/runtime"
)

// The writer names union list state as the runtime restores it.
func TestUnionPrefixIsTheRuntimes(t *testing.T) {
	if unionPrefix != runtime.UnionStatePrefix {
		t.Fatalf("unionPrefix %q, runtime.UnionStatePrefix %q", unionPrefix, runtime.UnionStatePrefix)
	}
}

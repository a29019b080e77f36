package nexmark_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	q "github.com/weirstream/weir/internal/jobs/nexmark"
)

// TestQ13SideInputFile runs q13 with a side input file of its own: keys
// that repeat (a bid joins each row), keys that are missing (the bid is
// dropped) and a quoted value, and compares with the reference.
func TestQ13SideInputFile(t *testing.T) {
	r := newRun(t, "q13", 20_000, 2, "heap")
	var b strings.Builder
	for k := 0; k < q.SideInputRows; k++ {
		switch k % 3 {
		case 0: // missing
		case 1:
			b.WriteString(strconv.Itoa(k) + ",one-" + strconv.Itoa(k) + "\n")
		case 2:
			b.WriteString(strconv.Itoa(k) + ",a\n" + strconv.Itoa(k) + ",\"b,\"\"c\"\"\"\n")
		}
	}
	r.params.SideInput = filepath.Join(r.dir, "side-input.csv")
	if err := os.WriteFile(r.params.SideInput, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, _ := r.execute(t)
	if err := q.Verify(r.query, r.params, r.n, lines); err != nil {
		t.Fatal(err)
	}
	var quoted int
	for _, l := range lines {
		if strings.HasSuffix(l, `,"b,""c"""`) {
			quoted++
		}
	}
	if len(lines) == 0 || quoted == 0 {
		t.Fatalf("%d lines, %d with the quoted value: the test proves little", len(lines), quoted)
	}
	t.Logf("%d lines committed, equal to the reference", len(lines))
}

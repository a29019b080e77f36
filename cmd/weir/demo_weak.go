package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/runtime"
)

// verifyWeak is --verify in WEAKLY_CONSISTENT mode: the mode may lose or
// duplicate records, but it must count every one exactly
// (docs/weak-consistency.md), so verify measures the committed lines by
// event index and compares them with the accounting instead of failing on
// any difference. st is the job's status in a local run; nil when the job
// ran on a cluster, whose accounting stays with the JobManager.
func (d *demoFlags) verifyWeak(w io.Writer, st *runtime.JobStatus, lines []string) error {
	missing, dup := demo.MissingDuplicated(d.events, lines)
	if st == nil {
		fmt.Fprintf(w, "verify: weak mode: %d missing, %d duplicated lines (accounting: not available here; the JobManager's REST API shows it, GET /jobs/<jobid> \"weak\")\n", missing, dup)
		if missing != 0 || dup != 0 {
			return fmt.Errorf("verify: weak mode: %d lines missing, %d duplicated, and the accounting is not available to compare them with", missing, dup)
		}
		return d.verifyExact(w, lines)
	}
	lost, duplicated := st.Weak.Lost.Load(), st.Weak.Duplicated.Load()
	fmt.Fprintf(w, "verify: weak mode: %d missing, %d duplicated lines (accounting: %d lost, %d duplicated)\n", missing, dup, lost, duplicated)
	if err := weakVerdict(missing, dup, lost, duplicated); err != nil {
		return err
	}
	if missing == 0 && dup == 0 {
		return d.verifyExact(w, lines)
	}
	return nil
}

// verifyExact holds a weak run that lost and duplicated nothing to the
// exactly-once standard: every committed line, counts and totals included,
// as a failure-free run. Only a lost or duplicated record may change the
// later lines of its account.
func (d *demoFlags) verifyExact(w io.Writer, lines []string) error {
	if diff := demo.Diff(demo.Expected(d.events, d.keys), lines); diff != "" {
		return fmt.Errorf("verify: weak mode: nothing lost or duplicated, yet the committed output differs from a failure-free run: %s", diff)
	}
	fmt.Fprintln(w, "verify: committed output equals the failure-free output exactly")
	return nil
}

// weakVerdict compares the measured missing and duplicated lines with the
// records the accounting reports lost and duplicated: the accounting must
// be exact, not an estimate.
func weakVerdict(missing, dup, lost, duplicated int64) error {
	var diffs []string
	if missing != lost {
		diffs = append(diffs, fmt.Sprintf("%d lines missing but %d records counted lost", missing, lost))
	}
	if dup != duplicated {
		diffs = append(diffs, fmt.Sprintf("%d lines duplicated but %d records counted duplicated", dup, duplicated))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("verify: weak mode: the accounting is not exact: %s", strings.Join(diffs, "; "))
}

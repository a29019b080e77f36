package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// verifyWeak is --verify in WEAKLY_CONSISTENT mode: the mode may lose or
// duplicate records, but it counts them (docs/weak-consistency.md), so
// verify measures the committed lines by event index and compares them
// with the accounting instead of failing on any difference. acc is the
// run's accounting (app.Outcome.Weak): the job's own in a local run, the
// JobManager's figures at the job's end for an attached client; nil when
// the JobManager reported none.
func (d *demoFlags) verifyWeak(w io.Writer, acc *app.WeakFigures, lines []string) error {
	missing, dup := demo.MissingDuplicated(d.events, lines)
	if acc == nil {
		fmt.Fprintf(w, "verify: weak mode: %d missing, %d duplicated lines (accounting: not available here; the JobManager's REST API shows it, GET /jobs/<jobid> \"weak\")\n", missing, dup)
		if missing != 0 || dup != 0 {
			return fmt.Errorf("verify: weak mode: %d lines missing, %d duplicated, and the accounting is not available to compare them with", missing, dup)
		}
		return d.verifyExact(w, lines)
	}
	fmt.Fprintf(w, "verify: weak mode: %d missing, %d duplicated lines (accounting: %d lost, %d possibly duplicated)\n", missing, dup, acc.Lost, acc.Duplicated)
	if err := weakVerdict(missing, dup, acc.Lost, acc.Duplicated); err != nil {
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
// accounting. Lost records are counted exactly: each is a missing line.
// Possibly duplicated records are those a restarted task that could not
// replay deterministically emitted again where its output log skipped them
// as sent: each is delivered right, or is one line twice and another
// missing. So missing lines are at least the lost, and at most the lost
// plus the possibly duplicated, and duplicated lines at most the possibly
// duplicated.
func weakVerdict(missing, dup, lost, duplicated int64) error {
	var diffs []string
	if missing < lost {
		diffs = append(diffs, fmt.Sprintf("%d lines missing but %d records counted lost", missing, lost))
	}
	if missing > lost+duplicated {
		diffs = append(diffs, fmt.Sprintf("%d lines missing, beyond the %d records counted lost and %d possibly duplicated", missing, lost, duplicated))
	}
	if dup > duplicated {
		diffs = append(diffs, fmt.Sprintf("%d lines duplicated but %d records counted possibly duplicated", dup, duplicated))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("verify: weak mode: the output is not within the accounting: %s", strings.Join(diffs, "; "))
}

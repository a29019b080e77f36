package file

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// Zombie writers (fault class 6): an attempt of a subtask that was
// declared dead (paused past the heartbeat timeout, partitioned) runs on
// beside the next attempt of the same subtask, with two Sinks for the
// same directory, uid and subtask. Nothing fences the file system, so
// what must hold is that the zombie can neither publish its lines nor
// spoil the new attempt's: a transaction name both pick is refused to the
// second with an error that says why, and whatever the zombie wrote is
// left nowhere once an attempt after it opened.

// TestZombieSecondBeginRefused: both attempts opened on the same
// directory state, so they pick the same next name; whichever begins it
// second is refused, naming the likely cause.
func TestZombieSecondBeginRefused(t *testing.T) {
	for _, zombieFirst := range []bool{false, true} {
		dir := t.TempDir()
		zombie := newSink(t, dir, "sink", 0)
		next := newSink(t, dir, "sink", 0)
		first, second := next, zombie
		if zombieFirst {
			first, second = zombie, next
		}
		txn := begin(t, first)
		_, err := second.Begin()
		if err == nil {
			t.Fatalf("zombieFirst=%v: both attempts began %s", zombieFirst, txn.Name)
		}
		for _, want := range []string{txn.Name, "another attempt of this subtask", "the restart"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("zombieFirst=%v: begin error %q does not say %q", zombieFirst, err, want)
			}
		}
		// The first one's transaction is untouched.
		must(t, first.Write(txn, lines("a")))
		must(t, first.PreCommit(txn))
		must(t, first.Commit(txn))
		wantCommitted(t, dir, "a")
	}
}

// TestZombieWorkLeftNowhere: the zombie began its transaction before the
// next attempt opened; that Open removes the zombie's in-progress file
// (no checkpoint holds it), so the zombie's writes and pre-commit land in
// an unlinked file and its commit finds nothing to publish.
func TestZombieWorkLeftNowhere(t *testing.T) {
	dir := t.TempDir()
	zombie := newSink(t, dir, "sink", 0)
	zt := begin(t, zombie)
	must(t, zombie.Write(zt, lines("zombie-1")))

	next := newSink(t, dir, "sink", 0)
	must(t, zombie.Write(zt, lines("zombie-2")))
	must(t, zombie.PreCommit(zt))
	nt := begin(t, next)
	if nt.Name == zt.Name {
		t.Fatalf("the next attempt reused the zombie's name %s", nt.Name)
	}
	must(t, next.Write(nt, lines("next")))
	must(t, next.PreCommit(nt))
	if err := zombie.Commit(zt); !errors.Is(err, weir.ErrTransactionLost) {
		t.Errorf("the zombie's commit of %s = %v, want ErrTransactionLost (its file was removed)", zt.Name, err)
	}
	must(t, next.Commit(nt))
	wantCommitted(t, dir, "next")
	wantFiles(t, dir, nt.Name)
}

// TestZombieAbortSparesAReusedName: names are picked from what is on
// disk, so once the zombie's in-progress file was removed a later attempt
// may pick its name again. The zombie aborting its transaction (as its
// operator does on close) must then not remove the later attempt's file,
// whose checkpoint may already hold it.
func TestZombieAbortSparesAReusedName(t *testing.T) {
	dir := t.TempDir()
	zombie := newSink(t, dir, "sink", 0)
	zt := begin(t, zombie)
	must(t, zombie.Write(zt, lines("zombie")))

	// The next attempt removes the zombie's file at Open, begins, and
	// fails: its close aborts the open transaction.
	second := newSink(t, dir, "sink", 0)
	st := begin(t, second)
	must(t, second.Abort(st))
	must(t, second.Close())

	// Nothing is on disk any more: the third attempt starts over at the
	// zombie's name.
	third := newSink(t, dir, "sink", 0)
	tt := begin(t, third)
	if tt.Name != zt.Name {
		t.Skipf("the third attempt chose %s, not the zombie's %s: the case is their reuse", tt.Name, zt.Name)
	}
	must(t, third.Write(tt, lines("third")))
	must(t, third.PreCommit(tt))

	if err := zombie.Abort(zt); err != nil {
		t.Logf("zombie abort: %v", err)
	}
	must(t, zombie.Close())
	must(t, third.Commit(tt))
	wantCommitted(t, dir, "third")
}

package app

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// progress prints one status line per second while a job runs: records
// emitted by the sources (replays included), rate, last checkpoint,
// restarts; in WEAKLY_CONSISTENT mode the tasks' snapshots and restarts
// instead of checkpoints.
type progress struct {
	out   io.Writer
	st    *jobstatus.JobStatus
	weak  bool
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	tty   bool
}

// startProgress starts the line on out if out is a terminal and quiet is
// false; weak selects the line of WEAKLY_CONSISTENT mode.
func startProgress(out io.Writer, st *jobstatus.JobStatus, weak, quiet bool) *progress {
	p := &progress{out: out, st: st, weak: weak, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	if quiet || !p.tty {
		close(p.done)
		return p
	}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	lastT := time.Now()
	for {
		select {
		case <-p.stop:
			fmt.Fprint(p.out, "\r\033[K")
			return
		case now := <-tick.C:
			n := p.st.SourceRecords.Load()
			rate := float64(n-last) / now.Sub(lastT).Seconds()
			last, lastT = n, now
			fmt.Fprintf(p.out, "\r\033[K%s  %s events  %s/s  %s", fmtDur(time.Since(p.start)), human(float64(n)), human(rate), p.checkpointLine())
		}
	}
}

func (p *progress) checkpointLine() string {
	if p.weak {
		return p.weakSnapshotLine()
	}
	s := fmt.Sprintf("checkpoints %d", p.st.CompletedCheckpoints.Load())
	if id := p.st.LastCheckpointID.Load(); id > 0 {
		s += fmt.Sprintf(" (last #%d, %s, %s)", id, time.Duration(p.st.LastCheckpointDuration.Load()).Round(time.Millisecond), byteSize(p.st.LastCheckpointSize.Load()))
	}
	if f := p.st.FailedCheckpoints.Load(); f > 0 {
		s += fmt.Sprintf("  failed %d", f)
		var causes []string
		for _, c := range p.st.FailedByCause() {
			causes = append(causes, fmt.Sprintf("%s %d", c.Cause, c.Count))
		}
		if len(causes) > 0 {
			s += " (" + strings.Join(causes, ", ") + ")"
		}
	}
	if r := p.st.Restarts.Load(); r > 0 {
		s += fmt.Sprintf("  restarts %d", r)
	}
	return s
}

func (p *progress) finish() {
	select {
	case <-p.done:
	default:
		close(p.stop)
		<-p.done
	}
}

// summary describes a finished run.
func (p *progress) summary() string {
	el := time.Since(p.start)
	n := p.st.SourceRecords.Load()
	s := fmt.Sprintf("ran %s: %d source records (%s/s, replays included), %s", fmtDur(el), n, human(float64(n)/el.Seconds()), p.checkpointLine())
	// (In WEAKLY_CONSISTENT mode each task restores its own snapshot: no
	// one checkpoint id says where the job restarted from.)
	if p.st.RestoredCheckpoint.Load() > 0 && !p.weak {
		s += fmt.Sprintf(", last restored from checkpoint %d", p.st.RestoredCheckpoint.Load())
	}
	return s
}

// weakSummary is the line that follows the summary in WEAKLY_CONSISTENT
// mode, "" in the others.
func (p *progress) weakSummary() string {
	if !p.weak {
		return ""
	}
	return weakFiguresOf(&p.st.Weak).line()
}

func human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func fmtDur(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/checkpoint/inspect"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// noChannelState and noSharedFiles explain the empty sections.
const (
	noChannelState = "none (aligned checkpoint; no records in flight stored)"
	noSharedFiles  = "none (full checkpoints; no incremental state)"
)

func newInspectCmd() *cobra.Command {
	var asJSON bool
	var defs []string
	c := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Verify a checkpoint and report what it holds",
		Long: `inspect verifies the checkpoint at PATH — a chk-<n> folder or its
_metadata file — like a restore would (metadata checksum, every state
file's size and CRC32C) and reports, per operator and subtask, the
key-group range, the keyed state file, the keyed states with their entry
counts and sizes (states with a time to live marked "with TTL"),
processing-time and event-time timers, the operator list states (source positions,
pending two-phase-commit transactions) and, for an unaligned checkpoint,
the channel state (in-flight records per input channel), then totals.

PATH may be an s3://bucket/key URL; the S3 endpoint and credentials come
from -D s3.endpoint=… s3.access-key=… (see docs/configuration.md) or the
AWS_* environment variables.

Exit codes: 0 the checkpoint verifies, 1 it is damaged (the message names
the file), 2 PATH is not a checkpoint.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("inspect takes one PATH, a chk-<n> folder or its _metadata file, got %d arguments (see %s --help)", len(args), c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			cfg := config.New()
			if err := cfg.SetOverrides(defs); err != nil {
				return usagef("-D: %v", err)
			}
			fsys, p, err := openLocation(c.Context(), cfg, args[0])
			if err != nil {
				return fmt.Errorf("inspect %s: %w", args[0], err)
			}
			r, err := inspect.InspectFS(c.Context(), fsys, p)
			if err == nil && s3fs.IsURL(args[0]) {
				r.Path = s3fs.URLOf(r.Path)
			}
			if errors.Is(err, inspect.ErrNotCheckpoint) {
				return usagef("inspect: %w", err)
			}
			if err != nil {
				return fmt.Errorf("inspect: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return printReport(c.OutOrStdout(), r)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON document")
	c.Flags().StringArrayVarP(&defs, "define", "D", nil, "configuration key=value (repeatable), for an s3:// PATH: s3.endpoint, s3.access-key, … (else the AWS_* environment variables)")
	return c
}

// printReport writes the text form of r.
func printReport(w io.Writer, r *inspect.Report) error {
	p := &printer{w: w}
	p.f("checkpoint %d of job %q: %s, taken %s\n", r.ID, r.Job, r.Kind, r.Timestamp.UTC().Format(time.RFC3339Nano))
	p.f("  path %s\n", r.Path)
	channelFiles := ""
	if t := r.Totals; t.ChannelStateFiles > 0 {
		channelFiles = fmt.Sprintf(" and %s (%s)", plural(int64(t.ChannelStateFiles), "channel-state file"), bytesStr(t.ChannelStateBytes))
	}
	if t := r.Totals; t.Stores > 0 {
		channelFiles += fmt.Sprintf(", %s (%s) and %s (%s) of %s", plural(int64(t.SharedFiles), "shared file"), bytesStr(t.SharedBytes),
			plural(int64(t.PrivateFiles), "private file"), bytesStr(t.PrivateBytes), plural(int64(t.Stores), "lsm store"))
	}
	p.f("  verified: metadata and %d keyed state files (%s)%s, checksums match\n", r.Totals.KeyedFiles, bytesStr(r.Totals.KeyedBytes), channelFiles)
	type subtaskKey struct {
		uid     string
		subtask int
	}
	chans := make(map[subtaskKey]*inspect.ChannelState, len(r.ChannelState))
	for i := range r.ChannelState {
		cs := &r.ChannelState[i]
		chans[subtaskKey{cs.Operator, cs.Subtask}] = cs
	}
	for _, op := range r.Operators {
		p.f("\noperator %q: parallelism %d, max parallelism %d\n", op.UID, op.Parallelism, op.MaxParallelism)
		for _, s := range op.Subtasks {
			p.f("  subtask %d\n", s.Index)
			if k := s.Keyed; k != nil {
				printKeyed(p, k)
			}
			if inc := s.Incremental; inc != nil {
				printIncremental(p, inc)
			}
			for _, ls := range s.OperatorState {
				p.f("    %s %q: %s, %s%s\n", listKind(ls.Union), ls.Name, plural(int64(ls.Elements), "element"), bytesStr(ls.Bytes), twoPhaseStr(ls.TwoPhaseCommit))
			}
			cs := chans[subtaskKey{op.UID, s.Index}]
			if cs != nil {
				printChannelState(p, cs)
			}
			if s.Keyed == nil && s.Incremental == nil && len(s.OperatorState) == 0 && cs == nil {
				p.f("    no state\n")
			}
		}
	}
	p.f("\nchannel state: %s\n", channelStateStr(r))
	p.f("shared files: %s\n", sharedStr(r))
	for _, f := range r.SharedFiles {
		refs := make([]string, len(f.ReferencedBy))
		for i, ref := range f.ReferencedBy {
			refs[i] = fmt.Sprintf("%s/%d", ref.Operator, ref.Subtask)
		}
		p.f("  %s: %s, crc32c 0x%08x, used by %s\n", f.File, bytesStr(f.Size), f.CRC32C, strings.Join(refs, ", "))
	}
	t := r.Totals
	p.f("\ntotals: %s, %s; %s (%s) with %s; %s, %s\n", plural(int64(t.Operators), "operator"), plural(int64(t.Subtasks), "subtask"),
		plural(int64(t.KeyedFiles), "keyed state file"), bytesStr(t.KeyedBytes), plural(int64(t.KeyGroups), "key-group block"),
		plural(t.Timers, "processing-time timer"), plural(t.EventTimers, "event-time timer"))
	for _, st := range t.KeyedStates {
		p.f("  %s keyed %s state%s %q: %s, %s in %s\n", st.Operator, st.Kind, ttlStr(st.TTL), st.Name, plural(st.Entries, "key"), bytesStr(st.Bytes), plural(int64(st.KeyGroups), "key group"))
	}
	for _, ls := range t.OperatorStates {
		p.f("  %s %s %q: %s, %s\n", ls.Operator, listKind(ls.Union), ls.Name, plural(int64(ls.Elements), "element"), bytesStr(ls.Bytes))
	}
	return p.err
}

func printKeyed(p *printer, k *inspect.Keyed) {
	covered := "none (no key has state)"
	if k.Covered != nil {
		covered = fmt.Sprintf("[%d,%d) in %s", k.Covered.Start, k.Covered.End, plural(int64(k.Blocks), "block"))
	}
	p.f("    key groups %s; assigned [%d,%d)\n", covered, k.Assigned.Start, k.Assigned.End)
	if k.OutsideAssigned > 0 {
		p.f("    WARNING: %s of key groups outside the assigned range\n", plural(int64(k.OutsideAssigned), "block"))
	}
	p.f("    keyed file %s: %s, crc32c 0x%08x\n", k.File, bytesStr(k.Size), k.CRC32C)
	for _, st := range k.States {
		p.f("    keyed %s state%s %q: %s, %s in %s\n", st.Kind, ttlStr(st.TTL), st.Name, plural(st.Entries, "key"), bytesStr(st.Bytes), plural(int64(st.KeyGroups), "key group"))
	}
	p.f("    timers: %d (%s)\n", k.Timers, bytesStr(k.TimerBytes))
	p.f("    event-time timers: %d (%s)\n", k.EventTimers, bytesStr(k.EventTimerBytes))
}

// ttlStr marks a state with a time to live.
func ttlStr(ttl bool) string {
	if ttl {
		return " with TTL"
	}
	return ""
}

// printIncremental prints a subtask's LSM store (incremental checkpoint).
func printIncremental(p *printer, inc *inspect.Incremental) {
	p.f("    lsm store %s: key groups [%d,%d); assigned [%d,%d)\n", inc.StoreID, inc.KeyGroups.Start, inc.KeyGroups.End, inc.Assigned.Start, inc.Assigned.End)
	p.f("    %s, %s uploaded by this checkpoint; %s (%s)\n", bytesStr(inc.FullSize), bytesStr(inc.UploadedSize), plural(int64(inc.SharedFiles), "shared file"), bytesStr(inc.SharedBytes))
	for _, st := range inc.States {
		p.f("    keyed %s state%s %q (id %d)\n", st.Kind, ttlStr(st.TTL), st.Name, st.ID)
	}
	for _, f := range inc.Private {
		p.f("    private file %s (%s): %s, crc32c 0x%08x\n", f.File, f.Local, bytesStr(f.Size), f.CRC32C)
	}
	if inc.TimersFile != "" {
		p.f("    timers file %s: %s, %s, %s\n", inc.TimersFile, bytesStr(inc.TimersSize), plural(inc.Timers, "processing-time timer"), plural(inc.EventTimers, "event-time timer"))
	}
}

// sharedStr sums the shared-files section.
func sharedStr(r *inspect.Report) string {
	if len(r.SharedFiles) == 0 {
		return noSharedFiles
	}
	t := r.Totals
	return fmt.Sprintf("%s (%s) in the job's shared area; the stores' full size %s, %s uploaded by this checkpoint",
		plural(int64(t.SharedFiles), "file"), bytesStr(t.SharedBytes), bytesStr(t.FullBytes), bytesStr(t.UploadedBytes))
}

// printChannelState prints a subtask's in-flight records, one line per
// input channel.
func printChannelState(p *printer, cs *inspect.ChannelState) {
	p.f("    channel-state file %s: %s, crc32c 0x%08x\n", cs.File, bytesStr(cs.Size), cs.CRC32C)
	for _, in := range cs.Inputs {
		gate := "nothing recorded"
		if in.GateChannel >= 0 {
			gate = fmt.Sprintf("gate channel %d", in.GateChannel)
		}
		p.f("    in flight on input %d from %q subtask %d of %d (%s): %s, %s in %s, %s\n", in.Input, in.ProducerUID, in.Producer, in.ProducerParallelism,
			gate, plural(in.Records, "record"), plural(int64(in.Batches), "batch"), plural(int64(in.Segments), "segment"), bytesStr(in.Bytes))
	}
}

// channelStateStr sums the channel-state section.
func channelStateStr(r *inspect.Report) string {
	if len(r.ChannelState) == 0 {
		return noChannelState
	}
	inputs := 0
	for _, cs := range r.ChannelState {
		inputs += len(cs.Inputs)
	}
	t := r.Totals
	return fmt.Sprintf("%s, %s, %s in flight; %s (%s)", plural(int64(len(r.ChannelState)), "subtask"), plural(int64(inputs), "input channel"),
		plural(t.InFlightRecords, "record"), plural(int64(t.ChannelStateFiles), "file"), bytesStr(t.ChannelStateBytes))
}

// printer remembers the first write error, so the report code stays flat.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// listKind names operator list state by how a restore distributes it.
func listKind(union bool) string {
	if union {
		return "union list state"
	}
	return "list state"
}

func twoPhaseStr(tp *inspect.TwoPhaseCommit) string {
	if tp == nil {
		return ""
	}
	ids := make([]string, len(tp.Pending))
	for i, id := range tp.Pending {
		ids[i] = fmt.Sprint(id)
	}
	pending := "no pending transactions"
	switch len(ids) {
	case 0:
	case 1:
		pending = "pending transaction of checkpoint " + ids[0]
	default:
		pending = "pending transactions of checkpoints " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("; %s; %s open", pending, plural(int64(tp.Open), "transaction"))
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	switch unit {
	case "entry":
		return fmt.Sprintf("%d entries", n)
	case "batch":
		return fmt.Sprintf("%d batches", n)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func bytesStr(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

package app

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/stateread"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// stateCommand is the `state` group: tools that read state without the
// program that wrote it.
func (p *Program) stateCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "state",
		Short: "Read the state of a checkpoint or savepoint without the program",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown command %q (see %s --help)", args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return Usagef("state needs a command: export (see %s --help)", c.CommandPath())
		},
	}
	c.AddCommand(p.stateExportCommand())
	return c
}

func (p *Program) stateExportCommand() *cobra.Command {
	var from, operator, stateName, out string
	var cf configFlags
	c := &cobra.Command{
		Use:   "export --from PATH",
		Short: "Write the state of a checkpoint or savepoint as JSON lines",
		Long: `export verifies the checkpoint or savepoint at --from (a chk-N folder, its
_metadata file, or a savepoint folder) like a restore would and writes its
state as JSON lines, one per entry, to stdout or --out FILE. No program is
needed: values are read by the schemas the checkpoint recorded.

  {"operator":"totals","state":"total","kind":"value","keyGroup":64,"key":"alice","value":{"User":"alice","Count":3}}

Keyed value and reducing states give one line per key; map states one per
key and user key ("userKey"); list states one per key with "value" an
array; states with a time to live add "ttlTimestamp" (list states
"ttlTimestamps"), the last access in Unix milliseconds. Timers give
{"operator","kind":"event-timer" or "processing-timer","keyGroup","key",
"timestamp"}, operator list state {"operator","state","kind":"operator-list",
"subtask","value"}, and a two-phase-commit sink's state its pending and
open transaction handles. Structs are objects keyed by field name, maps
arrays of [key, value] pairs, []byte base64, time.Time RFC 3339, types with
their own MarshalBinary {"type","base64"}, NaN and infinities strings.

--operator UID and --state NAME select; timers are exported only without
--state. A checkpoint written before schemas were recorded exports each
state's bytes as base64 with "schema":"unknown".

--from is a local path or an s3://bucket/path URL. S3 is configured as for
'run': the s3.* keys (s3.endpoint, s3.access-key, s3.secret-key,
s3.path.style.access, …) from --config FILE or -D key=value, else the
AWS_* environment variables (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, …).

An incremental (lsm) checkpoint exports the same lines as a savepoint of
the same state: each subtask's store is copied into state.backend.lsm.dir
when set (--config, -D), else the system's temporary folder, opened
read-only and written out in the savepoint format there, one subtask at a
time (free disk: about twice the largest subtask's store). Values of
states with a time to live that had expired but were not yet cleaned from
the store are exported too, with their ttlTimestamp (a savepoint leaves
them out).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("state export takes no arguments, got %q: give the checkpoint as --from PATH (see %s --help)", args[0], c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" {
				return Usagef("--from is required: the checkpoint (chk-N folder or its _metadata) or savepoint to export")
			}
			cfg, err := cf.load()
			if err != nil {
				return err
			}
			src, err := p.exportSource(c.Context(), hooks.Config(cfg), from)
			if err != nil {
				return err
			}
			return p.stateExport(c.Context(), src, operator, stateName, out)
		},
	}
	fs := c.Flags()
	fs.StringVar(&from, "from", "", "the checkpoint (chk-N folder or its _metadata) or savepoint to export, a local path or an s3:// URL (required)")
	MarkPath(fs, "from")
	cf.register(fs)
	fs.StringVar(&operator, "operator", "", "export only the operator with this uid")
	fs.StringVar(&stateName, "state", "", "export only the state of this name (keyed or operator list state)")
	fs.StringVar(&out, "out", "", "write to this file instead of stdout")
	return c
}

// exportFrom is where state export reads: --from as given, the path on
// its filesystem, and the folder for copies of incremental stores.
type exportFrom struct {
	loc, path, tempDir string
	fs                 vfs.FS
}

// s3ProbeTimeout bounds the check of an s3:// --from, so that an endpoint
// that swallows packets fails the export instead of hanging it (as the
// probe of run's --from does).
const s3ProbeTimeout = 30 * time.Second

// exportSource resolves --from as run resolves its --from: an s3:// URL is
// read through S3, configured from cfg's s3.* keys and else the AWS_*
// environment (s3fs.ConfigFrom), after a probe that names the endpoint,
// the credentials or the bucket that fail; anything else (file:// too) is
// a local path. A location that does not exist is a usage error naming
// --from, on S3 as locally.
func (p *Program) exportSource(ctx context.Context, cfg *config.Config, from string) (exportFrom, error) {
	src := exportFrom{loc: from, path: strings.TrimPrefix(from, "file://"), fs: vfs.OS{}, tempDir: cfg.String(config.StateBackendLSMDir)}
	if s3fs.IsURL(from) {
		path, err := s3fs.PathOf(from)
		if err != nil {
			return src, Usagef("--from %s: %v", from, err)
		}
		sc, err := s3fs.ConfigFrom(cfg, p.getenv)
		if err != nil {
			return src, fmt.Errorf("state export: s3 configuration: %w", err)
		}
		s3, err := s3fs.New(sc)
		if err != nil {
			return src, fmt.Errorf("state export: s3 configuration: %w", err)
		}
		pctx, cancel := context.WithTimeout(ctx, s3ProbeTimeout)
		err = s3.Probe(pctx, path)
		cancel()
		if err != nil {
			return src, fmt.Errorf("state export: --from: %w", err)
		}
		src.path, src.fs = path, s3
	}
	if _, err := src.fs.Stat(src.path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return src, Usagef("--from %s: no such file or folder; pass a chk-N folder, its _metadata file or a savepoint folder", from)
		}
		return src, fmt.Errorf("state export: --from %s: %w", from, err)
	}
	return src, nil
}

func (p *Program) stateExport(ctx context.Context, src exportFrom, uid, name, out string) (err error) {
	from := src.loc
	cp, err := stateread.Open(ctx, src.path, storage.WithFS(src.fs))
	if err != nil {
		return fmt.Errorf("state export: %w", err)
	}
	cp.TempDir = src.tempDir
	ops, err := cp.Operators(ctx)
	if err != nil {
		return fmt.Errorf("state export %s: %w", from, err)
	}
	if uid != "" {
		i := slices.IndexFunc(ops, func(op *stateread.Operator) bool { return op.UID == uid })
		if i < 0 {
			return Usagef("--operator %q: no operator of that uid holds state in %s; it holds state of: %s", uid, from, uids(ops))
		}
		ops = ops[i : i+1]
	}
	keep := func(s *stateread.State) bool {
		return name == "" || s.Name == name && s.Scope != checkpoint.ScopeTimers
	}
	if name != "" {
		found := false
		for _, op := range ops {
			found = found || slices.ContainsFunc(op.States, keep)
		}
		if !found {
			return Usagef("--state %q: no such state in %s; the states are: %s", name, from, stateNames(ops))
		}
	}
	var w io.Writer = p.stdout()
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("state export: --out: %w", err)
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("state export: --out: %w", cerr)
			}
		}()
		w = f
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	lines := 0
	for _, op := range ops {
		if !op.Known && slices.ContainsFunc(op.States, keep) {
			fmt.Fprintf(p.stderr(), "%s: warning: operator %s: the checkpoint was written before state schemas were recorded; its states are exported as base64 with \"schema\":\"unknown\" (restore it with the program that wrote it and take a savepoint, which records schemas)\n", p.name(), op.UID)
		}
		var line []byte
		for e, err := range cp.Entries(ctx, op, keep) {
			if err != nil {
				return fmt.Errorf("state export %s: %w", from, err)
			}
			line, err = appendEntry(line[:0], op, e)
			if err != nil {
				where := fmt.Sprintf("operator %s %s", op.UID, entryLabel(e))
				return fmt.Errorf("state export %s: %s: %w", from, where, err)
			}
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("state export: %w", err)
			}
			lines++
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("state export: %w", err)
	}
	if out != "" {
		fmt.Fprintf(p.stderr(), "%s: exported %d entries to %s\n", p.name(), lines, out)
	}
	return nil
}

func uids(ops []*stateread.Operator) string {
	var s []string
	for _, op := range ops {
		s = append(s, op.UID)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func stateNames(ops []*stateread.Operator) string {
	var s []string
	for _, op := range ops {
		for _, st := range op.States {
			if st.Scope != checkpoint.ScopeTimers {
				s = append(s, fmt.Sprintf("%s (operator %s, %s)", st.Name, op.UID, st.KindName()))
			}
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func entryLabel(e stateread.Entry) string {
	s := e.State
	switch {
	case s == nil:
		return "state"
	case s.Scope == checkpoint.ScopeTimers:
		return fmt.Sprintf("%ss, key group %d", s.KindName(), e.KeyGroup)
	case s.Scope == checkpoint.ScopeOperator:
		return fmt.Sprintf("operator list state %q, subtask %d", s.Name, e.Subtask)
	}
	return fmt.Sprintf("state %q, key group %d", s.Name, e.KeyGroup)
}

// appendEntry appends e's JSON line.
func appendEntry(dst []byte, op *stateread.Operator, e stateread.Entry) ([]byte, error) {
	s := e.State
	dst = append(dst, `{"operator":`...)
	dst = codec.AppendJSONString(dst, op.UID)
	if s.Scope != checkpoint.ScopeTimers {
		dst = append(dst, `,"state":`...)
		dst = codec.AppendJSONString(dst, s.Name)
	}
	dst = append(dst, `,"kind":`...)
	dst = codec.AppendJSONString(dst, s.KindName())
	if s.Scope == checkpoint.ScopeOperator {
		dst = append(dst, `,"subtask":`...)
		dst = strconv.AppendInt(dst, int64(e.Subtask), 10)
	} else {
		dst = append(dst, `,"keyGroup":`...)
		dst = strconv.AppendInt(dst, int64(e.KeyGroup), 10)
	}
	if !s.Known {
		dst = append(dst, `,"schema":"unknown"`...)
		if s.Scope == checkpoint.ScopeOperator {
			dst = append(dst, `,"valueBase64":`...)
		} else {
			dst = append(dst, `,"entries":`...)
			dst = strconv.AppendInt(dst, int64(e.RawCount), 10)
			dst = append(dst, `,"payloadBase64":`...)
		}
		dst = appendBase64(dst, e.Raw)
		return append(dst, "}\n"...), nil
	}
	var err error
	whole := func(what string, sc codec.Schema, b []byte) {
		if err != nil {
			return
		}
		var n int
		dst, n, err = codec.AppendJSON(dst, sc, b)
		if err == nil && n != len(b) {
			err = fmt.Errorf("%s: %d bytes after the value: %w", what, len(b)-n, codec.ErrCorrupt)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", what, err)
		}
	}
	if s.Scope != checkpoint.ScopeOperator {
		dst = append(dst, `,"key":`...)
		whole("key", s.Key, e.Key)
	}
	switch {
	case s.Scope == checkpoint.ScopeTimers:
		dst = append(dst, `,"timestamp":`...)
		dst = strconv.AppendInt(dst, e.Timestamp, 10)
	case s.Scope == checkpoint.ScopeOperator && s.Name == stateread.TwoPhaseStateName:
		dst = append(dst, `,"value":`...)
		dst, err = appendTwoPhase(dst, s.Value, e.Value)
	case e.Elements != nil || s.KindName() == "list":
		dst = append(dst, `,"value":[`...)
		for i, el := range e.Elements {
			if i > 0 {
				dst = append(dst, ',')
			}
			whole(fmt.Sprintf("element %d", i), s.Value, el)
		}
		dst = append(dst, ']')
		if s.TTL() {
			dst = append(dst, `,"ttlTimestamps":[`...)
			for i, ts := range e.Timestamps {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendInt(dst, ts, 10)
			}
			dst = append(dst, ']')
		}
	default:
		if e.UserKey != nil {
			dst = append(dst, `,"userKey":`...)
			whole("user key", s.UserKey, e.UserKey)
		}
		dst = append(dst, `,"value":`...)
		whole("value", s.Value, e.Value)
		if s.TTL() {
			dst = append(dst, `,"ttlTimestamp":`...)
			dst = strconv.AppendInt(dst, e.Timestamp, 10)
		}
	}
	if err != nil {
		return dst, err
	}
	return append(dst, "}\n"...), nil
}

// appendTwoPhase writes a two-phase-commit sink's state element:
// {"pending":[{"checkpoint":N,"txn":…}],"open":… or null}.
func appendTwoPhase(dst []byte, txn codec.Schema, elem []byte) ([]byte, error) {
	pending, open, hasOpen, err := stateread.TwoPhase(elem)
	if err != nil {
		return dst, err
	}
	one := func(b []byte) error {
		var n int
		dst, n, err = codec.AppendJSON(dst, txn, b)
		if err == nil && n != len(b) {
			err = fmt.Errorf("transaction handle: %d bytes after the value: %w", len(b)-n, codec.ErrCorrupt)
		}
		return err
	}
	dst = append(dst, `{"pending":[`...)
	for i, p := range pending {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"checkpoint":`...)
		dst = strconv.AppendInt(dst, p.Checkpoint, 10)
		dst = append(dst, `,"txn":`...)
		if err := one(p.Txn); err != nil {
			return dst, err
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"open":`...)
	if !hasOpen {
		dst = append(dst, "null"...)
	} else if err := one(open); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

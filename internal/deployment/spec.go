package deployment

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// JobSpec is everything a process needs to build a job's graph itself
// (application mode): the builder to run, its arguments and the
// configuration. Every role runs the same binary and builds the graph from
// the spec; runtime.Fingerprint proves they built the same one. A builder
// must be a pure function of (Args, Config), so the client normalises both
// before submitting (absolute paths, chosen seeds, client-only flags
// removed).
type JobSpec struct {
	// Name is the job id: it names the checkpoint folder and the REST
	// path, and is unique per cluster.
	Name string
	// Kind names the builder in the binary's registry ("demo",
	// "keyed-sum", a user job).
	Kind string
	// Args are the builder's arguments, normalised by the client.
	Args []string
	// Config holds the explicitly set configuration keys (YAML, -D,
	// flags); keys left at their defaults are absent.
	Config map[string]string
	// Parallelism is the parallelism of operators by uid, set by an
	// in-place rescale over what the builder chose; every role applies
	// it to the graph it builds. Absent (nil) until a rescale, and in
	// records written before rescales existed.
	Parallelism map[string]int `json:",omitempty"`
	// Fingerprint is runtime.Fingerprint of the JobGraph the JobManager
	// built; the zero value means not built yet (a client's submission).
	Fingerprint [32]byte
}

// maxJobNameLen bounds a job name: it becomes a folder name (255 bytes on
// common file systems) and part of URLs and metric labels.
const maxJobNameLen = 200

// Validate reports the first field that cannot work, naming it and the fix.
func (s JobSpec) Validate() error {
	if err := ValidateJobName(s.Name); err != nil {
		return err
	}
	if s.Kind == "" {
		return fmt.Errorf("job %s: kind is empty: name the job builder to run (e.g. demo)", s.Name)
	}
	if !isToken(s.Kind) {
		return fmt.Errorf("job %s: kind %q has spaces or unprintable characters: use the builder's registered name", s.Name, s.Kind)
	}
	for i, a := range s.Args {
		if !utf8.ValidString(a) {
			return fmt.Errorf("job %s: argument %d %q is not valid UTF-8: pass text arguments", s.Name, i, a)
		}
	}
	for k, v := range s.Config {
		if !isToken(k) {
			return fmt.Errorf("job %s: configuration key %q is empty or has spaces or unprintable characters: use keys like execution.checkpointing.interval", s.Name, k)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("job %s: configuration %s=%q is not valid UTF-8", s.Name, k, v)
		}
	}
	return nil
}

// isToken reports whether s is non-empty printable UTF-8 without spaces.
func isToken(s string) bool {
	return s != "" && utf8.ValidString(s) &&
		strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) < 0
}

// ValidateJobName checks a job name: non-empty, at most 200 bytes of
// printable UTF-8, no path separator, not "." or "..", since it names the
// job's checkpoint folder and appears in REST paths.
func ValidateJobName(name string) error {
	const fix = "use letters, digits, '.', '_' or '-' (the name becomes the checkpoint folder and the REST path)"
	switch {
	case name == "":
		return errors.New("job name is empty: " + fix)
	case len(name) > maxJobNameLen:
		return fmt.Errorf("job name %q is %d bytes, more than %d: %s", name, len(name), maxJobNameLen, fix)
	case name == "." || name == "..":
		return fmt.Errorf("job name %q is not a folder name: %s", name, fix)
	case !utf8.ValidString(name):
		return fmt.Errorf("job name %q is not valid UTF-8: %s", name, fix)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("job name %q contains a path separator: %s", name, fix)
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("job name %q contains unprintable characters: %s", name, fix)
	}
	return nil
}

// jobSpecJSON is the wire and job.json form: lower-case keys, the
// fingerprint in hex (empty when zero), absent arguments and configuration
// left out.
type jobSpecJSON struct {
	Name        string            `json:"name"`
	Kind        string            `json:"kind"`
	Args        []string          `json:"args,omitempty"`
	Config      map[string]string `json:"config,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
}

// MarshalJSON encodes the spec with its fingerprint in hex. Configuration
// keys come out sorted, so equal specs encode to equal bytes.
func (s JobSpec) MarshalJSON() ([]byte, error) {
	j := jobSpecJSON{Name: s.Name, Kind: s.Kind, Args: s.Args, Config: s.Config}
	if s.Fingerprint != ([32]byte{}) {
		j.Fingerprint = hex.EncodeToString(s.Fingerprint[:])
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes. Unknown keys are
// ignored, so a newer JobManager's additions do not break an older reader.
// It does not validate: call Validate, or use DecodeJobSpec.
func (s *JobSpec) UnmarshalJSON(data []byte) error {
	var j jobSpecJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	var fp [32]byte
	if j.Fingerprint != "" {
		b, err := hex.DecodeString(j.Fingerprint)
		if err != nil || len(b) != len(fp) {
			return fmt.Errorf("job spec %q: fingerprint %q is not 64 hex digits", j.Name, j.Fingerprint)
		}
		copy(fp[:], b)
	}
	*s = JobSpec{Name: j.Name, Kind: j.Kind, Args: j.Args, Config: j.Config, Fingerprint: fp}
	return nil
}

// DecodeJobSpec parses and validates a JSON job spec.
func DecodeJobSpec(data []byte) (JobSpec, error) {
	var s JobSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return JobSpec{}, fmt.Errorf("decode job spec: %w", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return JobSpec{}, errors.New("decode job spec: trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return JobSpec{}, fmt.Errorf("decode job spec: %w", err)
	}
	return s, nil
}

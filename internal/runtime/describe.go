package runtime

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/weirstream/weir/internal/dataflow"
)

// Describe renders the shape of a job graph as text, one fact per line, so
// that two processes that built the graph from the same JobSpec can prove
// they built the same thing (application mode: closures cannot be shipped,
// every role rebuilds the graph itself). It covers everything that decides
// how tasks are laid out and wired and how state is matched on restore:
// the max parallelism, each vertex's chain and parallelism, each node's id,
// uid, name, parallelisms and output record type, and each vertex input's
// producer and partitioning.
//
// Every line is self-contained (it names its vertex), so the first line
// two descriptions differ in is a readable message on its own; names and
// types are quoted, so no user string can break the one-line-per-fact
// shape. The text is stable across releases of the same protocol version:
// changing it changes every fingerprint.
//
// A vertex input's record type is its producer's output type, which the
// producer's node line already states, so input types are not repeated.
func Describe(jg *dataflow.JobGraph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "max-parallelism %d\n", jg.MaxParallelism)
	for _, v := range jg.Vertices {
		fmt.Fprintf(&b, "vertex %d %q p=%d\n", v.ID, v.Name(), v.Parallelism)
		for i, n := range v.Chain {
			fmt.Fprintf(&b, "vertex %d chain %d node %d uid=%q name=%q p=%d max-p=%d out=%q\n",
				v.ID, i, n.ID, n.UID, n.Name, n.Parallelism, n.MaxParallelism, n.OutType)
		}
		for _, in := range v.Inputs {
			last := in.From.Chain[len(in.From.Chain)-1]
			if in.Edge.Tag != "" {
				fmt.Fprintf(&b, "vertex %d input %d from vertex %d node %d %s side=%q out=%q\n",
					v.ID, in.Index, in.From.ID, last.ID, in.Edge.Partition, in.Edge.Tag, in.Edge.Side.OutType)
				continue
			}
			fmt.Fprintf(&b, "vertex %d input %d from vertex %d node %d %s\n",
				v.ID, in.Index, in.From.ID, last.ID, in.Edge.Partition)
		}
	}
	return b.String()
}

// Fingerprint is the SHA-256 of Describe(jg): equal fingerprints mean the
// graphs have the same shape. It does not see inside closures; the build
// id of the binary covers those.
func Fingerprint(jg *dataflow.JobGraph) [32]byte {
	return sha256.Sum256([]byte(Describe(jg)))
}

// FirstDifference compares two descriptions line by line and returns the
// first line (counted from 1) where they differ, with that line of each;
// a side that has no such line (it is shorter) gives "". It returns 0 and
// two empty strings when a and b are equal.
func FirstDifference(a, b string) (line int, left, right string) {
	if a == b {
		return 0, "", ""
	}
	la, lb := descLines(a), descLines(b)
	n := max(len(la), len(lb))
	for i := range n {
		if i >= len(la) || i >= len(lb) || la[i] != lb[i] {
			return i + 1, descLineAt(la, i), descLineAt(lb, i)
		}
	}
	// Only a final newline differs; Describe never produces that.
	return n + 1, "", ""
}

func descLineAt(ls []string, i int) string {
	if i < len(ls) {
		return ls[i]
	}
	return ""
}

// descLines splits s into lines without their newline; a final newline does
// not start another line.
func descLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// GraphMismatch compares the description the JobManager sent (want) with
// the one this process built (got) and returns nil when they are equal.
// Otherwise it returns an unrecoverable error naming the first differing
// line: a different graph from the same spec is a different binary or
// non-deterministic job code, and no restart can fix it.
func GraphMismatch(job, want, got string) error {
	line, jm, here := FirstDifference(want, got)
	if line == 0 {
		return nil
	}
	return Unrecoverable(fmt.Errorf("job %s: this TaskManager built a different graph from the same arguments, line %d: JobManager %s, here %s; run the same binary with the same arguments, and build the job without clocks, unseeded randomness, map order or host-local files",
		job, line, quoteDescLine(jm), quoteDescLine(here)))
}

func quoteDescLine(s string) string {
	if s == "" {
		return "(no line)"
	}
	return "`" + s + "`"
}

package nexmark

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// q13's side input: the table side_input (key BIGINT, value VARCHAR) that
// the bids are joined with on mod(auction, 10000) = key.
//
// The default table is the one nexmark/nexmark's side_input_gen.sh
// writes (SideInputGenerator with --num 10000): SideInputRows rows, key i
// with the value i in decimal, for i = 0 … 9999. weir builds it in memory;
// WriteSideInput writes it to a file to inspect or change, and a file of
// the same format named by Params.SideInput replaces it:
//
//   - a CSV file (RFC 4180, UTF-8), one row per line (a quoted value may
//     span lines), no header, empty lines skipped;
//   - each row has two fields: key, a decimal BIGINT (no spaces), and
//     value, any string (quoted when it holds a comma, a quote or a line
//     break; an empty field is the empty string);
//   - keys may repeat: a bid then joins with every row of its key, in file
//     order, as a lookup join returns all matching rows;
//   - rows whose key no mod(auction, 10000) can equal (|key| ≥ 10000) are
//     read and checked but can never join.
//
// A path that does not name an existing file means the default table.

// SideInputRows is the size of the default side input (Flink's benchmark
// generates 10000 rows) and the modulus of q13's join key.
const SideInputRows = 10_000

// sideInput is q13's table indexed by key: values[key+SideInputRows-1]
// holds the values of key, for the keys mod(auction, 10000) can take
// (-9999 … 9999; MOD has the sign of the dividend, as Java's %).
type sideInput struct {
	values [][]string
}

// lookup returns the values joined with auction; nil when none.
func (s *sideInput) lookup(auction int64) []string {
	return s.values[auction%SideInputRows+SideInputRows-1]
}

func newSideInput() *sideInput {
	return &sideInput{values: make([][]string, 2*SideInputRows-1)}
}

// defaultSideInput builds the table of SideInputGenerator: key i, value
// "i", for i in [0, SideInputRows).
func defaultSideInput() *sideInput {
	s := newSideInput()
	vals := make([]string, SideInputRows)
	for i := range SideInputRows {
		vals[i] = strconv.Itoa(i)
		s.values[i+SideInputRows-1] = vals[i : i+1 : i+1]
	}
	return s
}

// loadSideInput reads the side input from path, or returns the default
// table when path is empty. A named file that is not there is an error:
// a mistyped path must not quietly run the default table.
func loadSideInput(path string) (*sideInput, error) {
	if path == "" {
		return defaultSideInput(), nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("q13 side input %s does not exist: give a file of key,value lines, or leave --side-input out to use the default table (keys 0 … 9999, value = key)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("q13 side input: %w", err)
	}
	defer f.Close()
	s, err := readSideInput(f)
	if err != nil {
		return nil, fmt.Errorf("q13 side input %s: %w", path, err)
	}
	return s, nil
}

// readSideInput parses key,value CSV rows; errors name the line.
func readSideInput(r io.Reader) (*sideInput, error) {
	s := newSideInput()
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = 2
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if errors.Is(pe.Err, csv.ErrFieldCount) {
					return nil, fmt.Errorf("line %d: %d fields, want 2 (key,value)", pe.StartLine, len(rec))
				}
				return nil, fmt.Errorf("line %d: %w", pe.StartLine, pe.Err)
			}
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		key, err := strconv.ParseInt(rec[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q is not a BIGINT", line, rec[0])
		}
		if key <= -SideInputRows || key >= SideInputRows {
			continue // no mod(auction, 10000) equals it
		}
		i := key + SideInputRows - 1
		s.values[i] = append(s.values[i], rec[1])
	}
}

// WriteSideInput writes the default side input of q13 to path in the
// format loadSideInput reads: the lines "0,0" … "9999,9999".
func WriteSideInput(path string) error {
	var b []byte
	for i := range SideInputRows {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write q13 side input: %w", err)
	}
	return nil
}

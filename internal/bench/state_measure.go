package bench

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// uploadMeter measures what each checkpoint wrote to checkpoint storage,
// from the files themselves: everything under the checkpoint's own folder
// (chk-N/: full snapshot files, private files, _metadata) plus the files of
// the job's shared folder (shared/: incremental SSTs) it has not seen
// before. Shared names are never reused, so a new name is a new upload.
// This holds for full and incremental checkpoints alike and needs nothing
// from the runtime; checkpoints must complete one at a time.
type uploadMeter struct {
	jobDir string
	seen   map[string]bool
}

func newUploadMeter(jobDir string) *uploadMeter {
	return &uploadMeter{jobDir: jobDir, seen: map[string]bool{}}
}

// sharedDirName is the job's folder of shared (incremental) files.
const sharedDirName = "shared"

// measure returns the bytes checkpoint id uploaded and records the shared
// files it added as seen.
func (m *uploadMeter) measure(id int64) (int64, error) {
	own, err := dirSize(filepath.Join(m.jobDir, fmt.Sprintf("chk-%d", id)))
	if err != nil {
		return 0, fmt.Errorf("size of checkpoint %d: %w", id, err)
	}
	shared := filepath.Join(m.jobDir, sharedDirName)
	err = filepath.WalkDir(shared, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // no shared area (full checkpoints), or removed meanwhile
			}
			return err
		}
		if !d.Type().IsRegular() || m.seen[path] {
			return nil
		}
		info, err := d.Info()
		if os.IsNotExist(err) {
			return nil // removed by retention meanwhile: not this checkpoint's
		}
		if err != nil {
			return err
		}
		m.seen[path] = true
		own += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list shared checkpoint files: %w", err)
	}
	return own, nil
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// peakRSS returns the process's peak resident set size (VmHWM), 0 where
// /proc is not available.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseVmHWM(bufio.NewScanner(f))
}

// parseVmHWM reads "VmHWM:  123456 kB" from /proc/<pid>/status.
func parseVmHWM(sc *bufio.Scanner) int64 {
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		f := strings.Fields(line[len("VmHWM:"):])
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// medianInt64 and medianFloat return the median (the upper one of an even
// count); 0 for none.
func medianInt64(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/vfs"
)

// goldenRun is what testdata/finished-v1.golden holds.
var goldenRun = FinishedRun{
	Version:              1,
	Job:                  "demo",
	Started:              time.Date(2025, 3, 4, 10, 11, 12, 345e6, time.UTC),
	Finished:             time.Date(2025, 3, 4, 10, 12, 13, 456e6, time.UTC),
	FinalCheckpoint:      41,
	CompletedCheckpoints: 40,
	Restarts:             2,
	SourceRecords:        400000,
}

// A marker as version 1 writes it decodes to the same run, and the run
// encodes to the same bytes: a later build reads markers this one wrote.
func TestFinishedRunGolden(t *testing.T) {
	golden, err := os.ReadFile("testdata/finished-v1.golden")
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeFinishedRun(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, goldenRun) {
		t.Fatalf("golden decodes to\n%+v\nwant\n%+v", r, goldenRun)
	}
	again, err := EncodeFinishedRun(r)
	if err != nil || !bytes.Equal(again, golden) {
		t.Fatalf("re-encoding the golden marker differs (err %v):\n%s", err, again)
	}
}

// The golden marker placed in a job's folder is read back through the
// storage, as a new run of the job does before it starts.
func TestReadFinishedFromGolden(t *testing.T) {
	s := openStore(t)
	if _, ok, err := s.ReadFinished(); ok || err != nil {
		t.Fatalf("empty folder: ok %v, err %v; want no marker", ok, err)
	}
	golden, err := os.ReadFile("testdata/finished-v1.golden")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.JobDir(), "_finished.json"), golden, 0o644); err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.ReadFinished()
	if err != nil || !ok || !reflect.DeepEqual(r, goldenRun) {
		t.Fatalf("ReadFinished = %+v, %v, %v; want the golden run", r, ok, err)
	}
}

// Bytes that are not a marker this build understands are ErrCorrupt,
// naming the file and the defect, never taken for a marker or for none.
func TestReadFinishedRefusesBadMarkers(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not json", "FINISHED\n", "not JSON"},
		{"no version", `{"job":"demo","finished":"2025-03-04T10:12:13Z"}`, "has no version"},
		{"newer version", `{"version":2,"job":"demo","finished":"2025-03-04T10:12:13Z"}`, "version 2, newer than this weir's 1"},
		{"no job", `{"version":1,"finished":"2025-03-04T10:12:13Z"}`, "names no job"},
		{"no finish time", `{"version":1,"job":"demo"}`, "has no finish time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			if err := os.WriteFile(s.FinishedPath(), []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, ok, err := s.ReadFinished()
			if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.FinishedPath()) {
				t.Fatalf("ReadFinished = ok %v, %v; want ErrCorrupt naming %s and %q", ok, err, s.FinishedPath(), tc.want)
			}
		})
	}
}

// WriteFinished then DiscardAll, as a job that FINISHED does: the
// checkpoints and the shared area go, the marker stays and reads back.
func TestDiscardAllKeepsFinishedMarker(t *testing.T) {
	s := openStore(t)
	writeCheckpoint(t, s, 1)
	writeCheckpoint(t, s, 2)
	if err := os.MkdirAll(filepath.Join(s.JobDir(), "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := goldenRun
	run.Version = 0 // set by the write
	if err := s.WriteFinished(run); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardAll(); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, s.JobDir()); !slices.Equal(got, []string{"_finished.json"}) {
		t.Fatalf("after DiscardAll the job folder holds %v, want only the marker", got)
	}
	r, ok, err := s.ReadFinished()
	if err != nil || !ok || !reflect.DeepEqual(r, goldenRun) {
		t.Fatalf("ReadFinished = %+v, %v, %v; want the written run", r, ok, err)
	}
}

// Without a marker DiscardAll removes the job's folder itself, as it did
// before markers existed.
func TestDiscardAllWithoutMarkerRemovesFolder(t *testing.T) {
	s := openStore(t)
	writeCheckpoint(t, s, 1)
	if err := s.DiscardAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.JobDir()); !os.IsNotExist(err) {
		t.Fatalf("job folder without a marker survives DiscardAll (%v)", err)
	}
}

// A marker whose rename fails is not left behind, whole or half: the
// folder holds no marker and no temporary file.
func TestWriteFinishedFailureLeavesNoMarker(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "job", WithFS(vfs.WithErrors(vfs.OS{}, vfs.OnOp(vfs.OpRename, finishedName, vfs.ErrInjected))))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFinished(goldenRun); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("WriteFinished = %v, want the injected rename error", err)
	}
	if got := tree(t, s.JobDir()); len(got) != 0 {
		t.Fatalf("a failed marker write left %v", got)
	}
}

package checkpoint

import "testing"

func TestBlobName(t *testing.T) {
	n := BlobName(42, "0a1b")
	if n != "blob-42-0a1b" {
		t.Fatalf("BlobName = %q", n)
	}
	if id, ok := ParseBlobName(n); !ok || id != 42 {
		t.Fatalf("ParseBlobName(%q) = %d, %v", n, id, ok)
	}
	for _, bad := range []string{"", "blob-", "blob-42", "blob-42-", "blob-x-1", "blob-0-1", "blob--1-a", SharedName("0a1b2c3d", "000012.sst")} {
		if _, ok := ParseBlobName(bad); ok {
			t.Errorf("ParseBlobName(%q) accepted", bad)
		}
	}
}

// SharedRefs counts the blobs in the shared area beside incremental
// files, once per name; a savepoint's blobs (in its own folder) are not
// shared files.
func TestSharedRefsCountsBlobs(t *testing.T) {
	a, b := BlobName(3, "aa"), BlobName(4, "bb")
	md := &Metadata{ID: 5, Operators: []OperatorState{{UID: "sink", Subtasks: []SubtaskStateEntry{
		{Subtask: 0, State: OperatorSubtaskState{Blobs: []StateFile{{Path: "shared/" + a, Size: 3}, {Path: "chk-5/" + b}}}},
		{Subtask: 1, State: OperatorSubtaskState{
			Incremental: &IncrementalKeyedStateHandle{Shared: []SharedFileRef{{Name: "s-1.sst", Local: "1.sst"}}},
			Blobs:       []StateFile{{Path: "shared/" + a, Size: 3}},
		}},
	}}}}
	refs := md.SharedRefs()
	if len(refs) != 2 || refs[0].Name != a || refs[0].Size != 3 || refs[1].Name != "s-1.sst" {
		t.Fatalf("SharedRefs = %+v", refs)
	}
}

package checkpoint

import "testing"

func TestSubtaskFileName(t *testing.T) {
	if got, want := FileNamePart("src/map é"), "src_map___"; got != want {
		t.Errorf("FileNamePart = %q, want %q", got, want)
	}
	a, b := SubtaskFileName("k/1", 2, "keyed"), SubtaskFileName("k_1", 2, "keyed")
	if a == b {
		t.Errorf("uids k/1 and k_1 share the file name %q", a)
	}
	if got, want := SubtaskFileName("agg", 0, "channel"), "agg-"; len(got) < len(want) || got[:len(want)] != want || got[len(got)-10:] != "-0.channel" {
		t.Errorf("SubtaskFileName = %q, want agg-<crc>-0.channel", got)
	}
}

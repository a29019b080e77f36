package postgrescdc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pglogrepl"
)

// slotRecord is what a run writes, in a folder private to its job
// (WithSlotRecord), around creating its slot: a later run of the same job
// that starts afresh can tell the slot is its own and that no checkpoint
// depends on it (a process killed before its first checkpoint
// completed), and create it anew instead of refusing. Without the record
// a fresh start never drops an existing slot: it may be another job's.
//
// The record is written twice: before the slot is created, without Start
// (the intent: a process killed while the server created the slot, or
// before it learned the slot's start point, still left its name), and
// after, with the slot's consistent point. A run is in Open while it
// does both, so no checkpoint can have confirmed anything on a slot whose
// record holds no start.
type slotRecord struct {
	Slot  string `json:"slot"`
	Start string `json:"start,omitempty"` // the slot's consistent point; "" while it is being created
}

// recordPath is the record's file for this job and slot; "" without
// WithSlotRecord.
func (s *source) recordPath() string {
	if s.cfg.recordDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.recordDir, s.job, "cdc-slot-"+s.cfg.slot+".json")
}

// writeRecord records the slot this run creates (start 0: about to) or
// created. A failure is logged, not returned: without the record a later
// fresh start refuses the slot, as it would without WithSlotRecord, and
// says how to drop it.
func (s *source) writeRecord(start uint64) {
	p := s.recordPath()
	if p == "" {
		return
	}
	r := slotRecord{Slot: s.cfg.slot}
	if start != 0 {
		r.Start = pglogrepl.LSN(start).String()
	}
	b, _ := json.Marshal(r)
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		err = writeFileSynced(p, b)
	}
	if err != nil {
		s.log.Warn("postgres cdc: could not record the slot this run created; a fresh start after a crash before the first checkpoint will refuse the slot", "slot", s.cfg.slot, "file", p, "err", err)
	}
}

// dropRecord removes the record of a slot this run did not create after
// all (the server refused: it exists, another job's).
func (s *source) dropRecord() {
	if p := s.recordPath(); p != "" {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			s.log.Warn("postgres cdc: could not remove the record of a slot this run did not create; remove it by hand before starting this job afresh", "slot", s.cfg.slot, "file", p, "err", err)
		}
	}
}

// recordedStart is the consistent point of the slot a run of this job
// recorded creating, if the record names this slot: 0 when the record is
// the intent, written before the slot was created.
func (s *source) recordedStart() (uint64, bool) {
	p := s.recordPath()
	if p == "" {
		return 0, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, false
	}
	var r slotRecord
	if json.Unmarshal(b, &r) != nil || r.Slot != s.cfg.slot {
		return 0, false
	}
	if r.Start == "" {
		return 0, true
	}
	l, err := pglogrepl.ParseLSN(r.Start)
	if err != nil || l == 0 {
		return 0, false
	}
	return uint64(l), true
}

// writeFileSynced writes b to path through a synced temporary file and a
// rename, so that a crash leaves the old record or the new one.
func writeFileSynced(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// unusedOwnSlot says who created the existing slot if this job did and
// no checkpoint confirmed anything past its start point, so nothing
// depends on it; "" otherwise. An earlier attempt in this process knows
// from memory; an earlier run of the job (a killed process) from its
// slot record (WithSlotRecord).
func (s *source) unusedOwnSlot(slot slotInfo) string {
	if start := s.created.get(); start != 0 && slot.confirmed <= start {
		return "an earlier attempt of this job created"
	}
	if start, ok := s.recordedStart(); ok && (start == 0 || slot.confirmed <= start) {
		// start 0: that run died creating the slot or right after, in
		// Open, before any checkpoint could confirm anything on it.
		return "an earlier run of this job created (" + s.recordPath() + ")"
	}
	return ""
}

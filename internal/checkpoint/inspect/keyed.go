package inspect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// The keyed block format of internal/state (see its doc.go):
//
//	block   = version(1 byte) uvarint(keyGroup) uvarint(#sections) section*
//	section = string(name) kind(1 byte) uvarint(len) payload
//	payload = uvarint(#keys) (key state)*
//
// The kinds are state.Kind: value, list, map and reducing state, each
// possibly with the state.KindTTL flag (its values carry timestamps), and
// the two timer sections, processing time and event time, with the empty
// name. The block version is internal/state's; TestInspect fails if it
// drifts.
const blockVersion = 1

// maxZeroSizeCount is internal/state's bound on a key count that the bytes
// left cannot justify.
const maxZeroSizeCount = 1 << 20

var kindNames = map[state.Kind]string{state.KindValue: "value", state.KindList: "list", state.KindMap: "map", state.KindReducing: "reducing"}

// stateKind splits a section kind of a named state into its name and TTL
// flag; ok is false for a kind no state has.
func stateKind(k state.Kind) (name string, ttl bool, ok bool) {
	if k&state.KindTTL != 0 && !k.HasTTL() {
		return "", false, false
	}
	name, ok = kindNames[k.Base()]
	return name, k.HasTTL(), ok
}

// keyed summarises the keyed state file data described by h, written by
// subtask of an operator with the given parallelism. abs names the file in
// errors, which wrap storage.ErrCorrupt: the checksum matched, so bad
// bytes mean a writer this build does not understand or a damaged writer.
func keyed(h *checkpoint.KeyedStateHandle, data []byte, abs string, maxP, parallelism, subtask int) (*Keyed, error) {
	asg := keygroup.RangeFor(maxP, parallelism, subtask)
	k := &Keyed{
		File:     h.File.Path,
		Size:     h.File.Size,
		CRC32C:   h.File.CRC32C,
		Assigned: Range{Start: asg.Start, End: asg.End},
		Blocks:   len(h.KeyGroups),
		States:   []KeyedState{},
	}
	byName := map[string]*KeyedState{}
	for _, kgo := range h.KeyGroups {
		if !asg.Contains(kgo.KeyGroup) {
			k.OutsideAssigned++
		}
		if k.Covered == nil {
			k.Covered = &Range{Start: kgo.KeyGroup, End: kgo.KeyGroup + 1}
		}
		k.Covered.Start = min(k.Covered.Start, kgo.KeyGroup)
		k.Covered.End = max(k.Covered.End, kgo.KeyGroup+1)
		end := kgo.Offset + kgo.Length
		if kgo.Offset < 0 || kgo.Length < 0 || end > int64(len(data)) {
			return nil, fmt.Errorf("state file %s: key group %d: block [%d,+%d) lies outside the %d-byte file: %w", abs, kgo.KeyGroup, kgo.Offset, kgo.Length, len(data), storage.ErrCorrupt)
		}
		secs, err := parseBlock(data[kgo.Offset:end], kgo.KeyGroup)
		if err != nil {
			return nil, fmt.Errorf("state file %s: key group %d at offset %d: %w: %w", abs, kgo.KeyGroup, kgo.Offset, storage.ErrCorrupt, err)
		}
		for _, s := range secs {
			switch s.kind {
			case state.KindTimers:
				k.Timers += s.entries
				k.TimerBytes += s.bytes
				continue
			case state.KindEventTimers:
				k.EventTimers += s.entries
				k.EventTimerBytes += s.bytes
				continue
			}
			kind, ttl, _ := stateKind(s.kind) // parseBlock checked it
			st := byName[s.name]
			if st == nil {
				st = &KeyedState{Name: s.name, Kind: kind, TTL: ttl}
				byName[s.name] = st
			}
			if st.Kind != kind || st.TTL != ttl {
				return nil, fmt.Errorf("state file %s: key group %d: state %q is %s here and %s in an earlier key group: %w", abs, kgo.KeyGroup, s.name, s.kind, kindLabel(st.Kind, st.TTL), storage.ErrCorrupt)
			}
			st.Entries += s.entries
			st.Bytes += s.bytes
			st.KeyGroups++
		}
	}
	for _, st := range byName {
		k.States = append(k.States, *st)
	}
	sort.Slice(k.States, func(i, j int) bool { return k.States[i].Name < k.States[j].Name })
	return k, nil
}

// section is one state's part of a key-group block.
type section struct {
	name    string
	kind    state.Kind
	entries int64 // keys (timers: timers)
	bytes   int64 // payload length
}

// parseBlock reads the section headers and entry counts of one block; it
// does not decode keys or values, whose codecs only the job knows.
func parseBlock(b []byte, kg int) ([]section, error) {
	if len(b) == 0 || b[0] != blockVersion {
		return nil, fmt.Errorf("unknown block version (this build reads %d); was the file written by a newer weir?", blockVersion)
	}
	r := b[1:]
	got, n := binary.Uvarint(r)
	if n <= 0 || got != uint64(kg) {
		return nil, fmt.Errorf("block names key group %d", got)
	}
	r = r[n:]
	count, n := binary.Uvarint(r)
	if n <= 0 || count > uint64(len(r)) {
		return nil, errors.New("bad section count")
	}
	r = r[n:]
	secs := make([]section, 0, count)
	for range count {
		name, n, err := readBytes(r)
		if err != nil {
			return nil, fmt.Errorf("section name: %w", err)
		}
		r = r[n:]
		if len(r) == 0 {
			return nil, fmt.Errorf("state %q: truncated", name)
		}
		k := state.Kind(r[0])
		timers := k == state.KindTimers || k == state.KindEventTimers
		if _, _, ok := stateKind(k); !ok && !timers || timers != (len(name) == 0) {
			return nil, fmt.Errorf("state %q: unknown kind %d", name, k)
		}
		payload, n, err := readBytes(r[1:])
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", name, err)
		}
		r = r[1+n:]
		keys, m := binary.Uvarint(payload)
		// Like the restore: entries take a byte at least, unless their
		// types have zero size, so a count beyond both is garbage.
		if m <= 0 || keys > uint64(len(payload)-m) && keys > maxZeroSizeCount {
			return nil, fmt.Errorf("state %q: bad key count", name)
		}
		secs = append(secs, section{name: string(name), kind: k, entries: int64(keys), bytes: int64(len(payload))})
	}
	if len(r) != 0 {
		return nil, fmt.Errorf("%d bytes after the last section", len(r))
	}
	return secs, nil
}

// readBytes reads a uvarint-length-prefixed byte string.
func readBytes(src []byte) ([]byte, int, error) {
	l, n := binary.Uvarint(src)
	if n <= 0 {
		return nil, 0, errors.New("bad length varint")
	}
	if l > uint64(len(src)-n) {
		return nil, 0, fmt.Errorf("length %d exceeds the %d bytes left", l, len(src)-n)
	}
	return src[n : n+int(l)], n + int(l), nil
}

// kindLabel names a state kind as internal/state's errors do ("value
// state", "list state with TTL").
func kindLabel(kind string, ttl bool) string {
	if ttl {
		return kind + " state with TTL"
	}
	return kind + " state"
}

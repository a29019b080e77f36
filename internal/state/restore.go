package state

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
)

// RestoreSource is one keyed state file of a checkpoint: its bytes and the
// index of its key-group blocks, as returned by KeyedSnapshot.WriteBlocks.
type RestoreSource struct {
	Data      []byte
	KeyGroups []checkpoint.KeyGroupOffset
}

// Restore loads the blocks of the backend's own key groups from sources,
// skipping the others, so a rescaled subtask can take its groups from
// several old subtasks' files. It runs before the operator registers its
// states: blocks of unregistered states are kept (copied) and decoded at
// registration. Bad bytes give an error wrapping codec.ErrCorrupt that
// names the state and key group; a state whose kind differs from its
// registration gives one wrapping ErrStateMismatch. After an error the
// backend holds part of the checkpoint and must be discarded.
func (b *KeyedBackend[K]) Restore(sources []RestoreSource) error {
	for si, src := range sources {
		for _, kgo := range src.KeyGroups {
			if !b.kgs.Contains(kgo.KeyGroup) {
				continue
			}
			end := kgo.Offset + kgo.Length
			if kgo.Offset < 0 || kgo.Length < 0 || end < kgo.Offset || end > int64(len(src.Data)) {
				return fmt.Errorf("restore keyed state: source %d key group %d: block [%d, +%d) outside the %d-byte file: %w",
					si, kgo.KeyGroup, kgo.Offset, kgo.Length, len(src.Data), codec.ErrCorrupt)
			}
			if err := b.restoreBlock(kgo.KeyGroup, src.Data[kgo.Offset:end]); err != nil {
				return fmt.Errorf("restore keyed state: source %d: %w", si, err)
			}
		}
	}
	b.timers.rebuild()
	return nil
}

// restoreBlock decodes one key group's block.
func (b *KeyedBackend[K]) restoreBlock(kg int, blk []byte) error {
	bad := func(what string, args ...any) error {
		return fmt.Errorf("key group %d: %s: %w", kg, fmt.Sprintf(what, args...), codec.ErrCorrupt)
	}
	if len(blk) == 0 || blk[0] != blockVersion {
		return bad("unknown block version (want %d); was the file written by a newer weir?", blockVersion)
	}
	r := blk[1:]
	got, n := binary.Uvarint(r)
	if n <= 0 || got != uint64(kg) {
		return bad("block names key group %d", got)
	}
	r = r[n:]
	count, n := binary.Uvarint(r)
	if n <= 0 || count > uint64(len(r)) {
		return bad("bad section count")
	}
	r = r[n:]
	i := kg - b.kgs.Start
	for range count {
		name, n, err := readString(r)
		if err != nil {
			return bad("section name: %v", err)
		}
		r = r[n:]
		if len(r) == 0 {
			return bad("state %q: truncated", name)
		}
		k := kind(r[0])
		if k < kindValue || k > kindTimers || (k == kindTimers) != (name == "") {
			return bad("state %q: unknown kind %d", name, r[0])
		}
		payload, n, err := readBytes(r[1:])
		if err != nil {
			return bad("state %q: %v", name, err)
		}
		r = r[1+n:]
		if err := b.restoreSection(name, k, i, payload); err != nil {
			if name == "" {
				return fmt.Errorf("key group %d: timers: %w", kg, err)
			}
			return fmt.Errorf("state %q key group %d: %w", name, kg, err)
		}
	}
	if len(r) != 0 {
		return bad("%d bytes after the last section", len(r))
	}
	return nil
}

func (b *KeyedBackend[K]) restoreSection(name string, k kind, i int, payload []byte) error {
	if k == kindTimers {
		return b.timers.core.restoreGroup(i, payload)
	}
	if st, ok := b.states[name]; ok {
		if st.stateKind() != k {
			return fmt.Errorf("checkpoint holds %s but it is registered as %s; keep the kind or use another name: %w", k, st.types(), ErrStateMismatch)
		}
		return st.restoreGroup(i, payload)
	}
	p, ok := b.pending[name]
	if !ok {
		p = &pendingState{kind: k, blocks: make([][]byte, b.kgs.Len())}
		b.pending[name] = p
	}
	if p.kind != k {
		return fmt.Errorf("checkpoint holds it both as %s and as %s: %w", p.kind, k, codec.ErrCorrupt)
	}
	// Copy: the source file's buffer need not stay alive for one state.
	p.blocks[i] = bytes.Clone(payload)
	if p.blocks[i] == nil {
		p.blocks[i] = []byte{}
	}
	return nil
}

func readBytes(src []byte) ([]byte, int, error) {
	l, n := binary.Uvarint(src)
	if n <= 0 {
		return nil, 0, fmt.Errorf("bad length varint")
	}
	if l > uint64(len(src)-n) {
		return nil, 0, fmt.Errorf("length %d exceeds the %d bytes left", l, len(src)-n)
	}
	return src[n : n+int(l)], n + int(l), nil
}

func readString(src []byte) (string, int, error) {
	b, n, err := readBytes(src)
	return string(b), n, err
}

package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
)

// Restore loads the blocks of the backend's own key groups from sources,
// skipping the others, so a rescaled subtask can take its groups from
// several old subtasks' files. It runs before the operator registers its
// states: blocks of unregistered states are kept (copied) and decoded at
// registration. Files are read as streams, one block in memory at a
// time (see ForEachBlock); the payloads of unregistered states are copied,
// so the memory a restore needs is about the restored state. Bad bytes give an error wrapping codec.ErrCorrupt that
// names the state and key group; a state whose kind differs from its
// registration gives one wrapping ErrStateMismatch. After an error the
// backend holds part of the checkpoint and must be discarded.
func (b *KeyedBackend[K]) Restore(ctx context.Context, sources []RestoreSource) error {
	err := ForEachBlock(ctx, sources, b.kgs, func(kg int, blk []byte) error {
		i := kg - b.kgs.Start
		return ParseBlock(kg, blk, func(name string, k Kind, payload []byte) error {
			return b.restoreSection(name, k, i, payload)
		})
	})
	if err != nil {
		return err
	}
	b.timers.rebuild()
	b.events.rebuild()
	return nil
}

func (b *KeyedBackend[K]) restoreSection(name string, k Kind, i int, payload []byte) error {
	switch k {
	case KindTimers:
		return b.timers.core.restoreGroup(i, payload)
	case KindEventTimers:
		return b.events.core.restoreGroup(i, payload)
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

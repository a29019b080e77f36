package lsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// A restore runs before the operator registers its states, and splitting a
// canonical payload into entries needs the state's codecs. So the payload
// of a state not registered yet is staged in the store itself, one store
// key per (state, key group), and decoded into state keys when the state
// is registered (ingest). Holding it in Go memory instead would cost as
// much memory as the restored state, which is what the store is for.
//
//	stage key = 0xfe uvarint(len(name)) name kg(2, big endian)
//
// 0xfe is above every state key (first byte at most 0x7f) and below the
// catalogue (0xff 0xff), so neither a key-group range nor the catalogue
// scan meets a staged payload.
const stageTag = 0xfe

// appendStageKey appends the stage key of state name's payload of kg.
func appendStageKey(dst []byte, name string, kg int) []byte {
	dst = append(dst, stageTag)
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// stageBounds are the first and the end stage keys of state name over the
// backend's key groups.
func (b *Backend[K]) stageBounds(name string) (lo, hi []byte) {
	return appendStageKey(nil, name, b.kgs.Start), appendStageKey(nil, name, b.kgs.End)
}

// stage writes the canonical payload of key group kg of the unregistered
// state name (the batch copies it).
func (l *loader[K]) stage(name string, kg int, payload []byte) error {
	l.key = appendStageKey(l.key[:0], name, kg)
	return l.set(l.key, payload)
}

// ingest decodes the staged payloads of state r, which has just been
// registered, into its store keys, and deletes them.
func (b *Backend[K]) ingest(r *registration) error {
	lo, hi := b.stageBounds(r.spec.Name)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("restore state %q: staged payloads: %w", r.spec.Name, err)
	}
	l := b.newLoader()
	defer l.close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		kg := int(binary.BigEndian.Uint16(k[len(k)-kgLen:]))
		v, err := it.ValueAndErr()
		if err == nil {
			err = l.group(r, kg, v)
		}
		if err != nil {
			return errors.Join(fmt.Errorf("restore state %q key group %d: %w", r.spec.Name, kg, err), it.Close())
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("restore state %q: staged payloads: %w", r.spec.Name, err)
	}
	if err := l.batch.DeleteRange(lo, hi, nil); err != nil {
		return fmt.Errorf("restore state %q: drop staged payloads: %w", r.spec.Name, err)
	}
	return l.flush()
}

// stagedGroup appends the staged payload of state name in kg, as read by
// snapshot snap, and reports whether there is one.
func stagedGroup(snap *pebble.Snapshot, name string, kg int, dst []byte) ([]byte, bool, error) {
	v, closer, err := snap.Get(appendStageKey(nil, name, kg))
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, fmt.Errorf("lsm state backend: read staged state %q key group %d: %w", name, kg, err)
	}
	dst = append(dst, v...)
	return dst, true, closer.Close()
}

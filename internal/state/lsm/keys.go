package lsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
)

// Key layout of the store (see the package doc):
//
//	state key = kg(2, big endian) sid(2, big endian) uvarint(len(k)) k uvarint(len(ns)) ns [suffix]
//	suffix    = uvarint(len(uk)) uk      map state: one store key per user key
//	meta key  = 0xff 0xff name           the state catalogue, above every key group
//
// The key group comes first, so a key-group range is a contiguous range of
// store keys (rescaling and range deletes work on whole ranges); the state
// id next, so one state of one key group is contiguous too (a snapshot
// writes it with one seek). Keys and user keys carry their length, so no
// encoding is a prefix of another and a key's map entries are exactly the
// store keys under its prefix. The namespace is empty until weir has
// windows; it is in the layout now so that adding them needs no migration.

const (
	kgLen     = 2
	sidLen    = 2
	headerLen = kgLen + sidLen
	// maxStates bounds state ids: 0xffff is never used, so that a state's
	// range end (sid+1) fits in two bytes.
	maxStates = 0xffff
)

// metaPrefix starts the catalogue keys. Key groups are below 32768, so the
// first byte of a state key is at most 0x7f.
var metaPrefix = []byte{0xff, 0xff}

// appendGroupPrefix appends the first store key of key group kg.
func appendGroupPrefix(dst []byte, kg int) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// appendStatePrefix appends the first store key of state sid in kg.
func appendStatePrefix(dst []byte, kg int, sid uint16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	return binary.BigEndian.AppendUint16(dst, sid)
}

// appendKey appends the store key of key bytes k (already encoded by the
// key codec) with namespace ns, for state sid in kg, without suffix.
func appendKey(dst []byte, kg int, sid uint16, k, ns []byte) []byte {
	dst = appendStatePrefix(dst, kg, sid)
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	dst = binary.AppendUvarint(dst, uint64(len(ns)))
	return append(dst, ns...)
}

// appendUserKey appends a map state's suffix.
func appendUserKey(dst, uk []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(uk)))
	return append(dst, uk...)
}

// setSID writes sid into a store key built with another one.
func setSID(key []byte, sid uint16) {
	binary.BigEndian.PutUint16(key[kgLen:], sid)
}

// prefixEnd returns the smallest key above every key with prefix p, or nil
// if there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// errBadKey marks a store key that does not follow the layout.
var errBadKey = errors.New("store key does not follow the layout")

// storeKey is a parsed state key.
type storeKey struct {
	kg     int
	sid    uint16
	key    []byte // the key codec's encoding
	ns     []byte
	suffix []byte // the rest: a map state's uvarint(len(uk)) uk
}

// parseKey splits a state key; the slices alias k.
func parseKey(k []byte) (storeKey, error) {
	if len(k) < headerLen {
		return storeKey{}, fmt.Errorf("%w: %d bytes: %w", errBadKey, len(k), codec.ErrCorrupt)
	}
	sk := storeKey{kg: int(binary.BigEndian.Uint16(k)), sid: binary.BigEndian.Uint16(k[kgLen:])}
	r := k[headerLen:]
	var err error
	if sk.key, r, err = lengthPrefixed(r); err != nil {
		return storeKey{}, err
	}
	if sk.ns, r, err = lengthPrefixed(r); err != nil {
		return storeKey{}, err
	}
	sk.suffix = r
	return sk, nil
}

// userKey parses a map state's suffix.
func userKey(suffix []byte) ([]byte, error) {
	uk, rest, err := lengthPrefixed(suffix)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes after the user key: %w", errBadKey, len(rest), codec.ErrCorrupt)
	}
	return uk, err
}

func lengthPrefixed(src []byte) (b, rest []byte, err error) {
	l, n := binary.Uvarint(src)
	if n <= 0 || l > uint64(len(src)-n) {
		return nil, nil, fmt.Errorf("%w: bad length: %w", errBadKey, codec.ErrCorrupt)
	}
	end := n + int(l)
	return src[n:end], src[end:], nil
}

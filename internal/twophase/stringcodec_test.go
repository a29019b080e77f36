package twophase

import (
	"errors"
	"unicode/utf8"
)

// stringCodec encodes string handles as their UTF-8 bytes; it refuses
// invalid UTF-8 so that codec errors are exercised too.
type stringCodec struct{}

func (stringCodec) Encode(txn string) ([]byte, error) {
	if !utf8.ValidString(txn) {
		return nil, errors.New("invalid utf-8 handle")
	}
	return []byte(txn), nil
}

func (stringCodec) Decode(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", errors.New("invalid utf-8 handle")
	}
	return string(b), nil
}

package wire

import "encoding/binary"

// Magic opens every Hello and HelloOK payload, so a peer that is not a weir
// data port (an HTTP client, a stray gRPC dial) fails at the first frame.
const Magic = "WEIRNET\x00"

// Version is the network protocol version this package speaks. A change of
// the frame or payload layout bumps it; peers of different versions refuse
// each other with a VersionError.
const Version uint16 = 1

// HelloMsg is the payload of Hello (dialer to acceptor) and HelloOK (back).
// Each side names itself and the peer it means to reach, so a connection to
// a recycled address of a replaced TaskManager is caught at once, and its
// build id, so two different binaries never exchange records.
type HelloMsg struct {
	// Version is the sender's protocol version; AppendHello writes Version.
	Version uint16
	// From is the sender's ResourceID, To the one it expects at the other
	// end.
	From, To string
	// BuildID identifies the sender's executable.
	BuildID string
}

// AppendHello appends a Hello or HelloOK frame (kind) carrying m with this
// package's Version. It panics on fields DecodeHello would refuse.
func AppendHello(dst []byte, kind Kind, m HelloMsg) []byte {
	if kind != Hello && kind != HelloOK {
		panic("wire: AppendHello with kind " + kind.String())
	}
	if m.From == "" || m.To == "" || len(m.From) > maxString || len(m.To) > maxString || len(m.BuildID) > maxString {
		panic("wire: Hello with an empty or oversized ResourceID or build id")
	}
	dst, start := beginFrame(dst, Header{Kind: kind})
	m.Version = Version
	dst = m.Append(dst)
	return endFrame(dst, start)
}

// Append appends m's payload encoding, version as given.
func (m HelloMsg) Append(dst []byte) []byte {
	dst = append(dst, Magic...)
	dst = binary.BigEndian.AppendUint16(dst, m.Version)
	dst = appendString(dst, m.From)
	dst = appendString(dst, m.To)
	return appendString(dst, m.BuildID)
}

// DecodeHello decodes the payload of a frame of kind (Hello or HelloOK).
// A payload with the right magic and another version yields a
// *VersionError and the version alone: the rest of its layout is unknown.
func DecodeHello(kind Kind, b []byte) (HelloMsg, error) {
	p := payload{kind: kind, b: b}
	if magic := p.bytes("magic", len(Magic)); p.err == nil && string(magic) != Magic {
		p.fail(DefectValue, "magic %q, want %q: the peer is not a weir data port", magic, Magic)
	}
	m := HelloMsg{Version: p.u16("version")}
	if p.err != nil {
		return HelloMsg{}, p.err
	}
	if m.Version != Version {
		return HelloMsg{Version: m.Version}, &VersionError{Peer: m.Version, Local: Version}
	}
	m.From = p.str("sender ResourceID", 1)
	m.To = p.str("receiver ResourceID", 1)
	m.BuildID = p.str("build id", 0)
	if err := p.end("build id"); err != nil {
		return HelloMsg{}, err
	}
	return m, nil
}

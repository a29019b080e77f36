package network

import (
	"fmt"
	"sync"
)

// Serialized is a batch of records in encoded form: the payload (Buffer.Data)
// of a Data buffer that crossed a process boundary. Bytes hold the records
// as the edge's channel codec encodes a batch (a uvarint header with the
// record count, then the records, then their timestamps if the batch has
// Times), so the consumer decodes them with the same codec that
// records channel state, and recording an overtaken remote batch is a
// byte copy. Records is the record count, known without decoding.
//
// Whoever holds a Serialized owns it, like a Batch: the receiving task from
// Poll until it calls Release.
type Serialized struct {
	Bytes   []byte
	Records int
	pool    *SerializedPool
	free    bool // in the pool's free list; guarded by pool.mu
}

// Release returns the buffer to its pool. The caller must not touch it
// afterwards; releasing it twice panics, as recycling a Batch twice does.
func (s *Serialized) Release() {
	if s.pool == nil {
		return
	}
	s.pool.put(s)
}

// SerializedPool hands out Serialized buffers of one channel (or gate) and
// takes them back, like Pool does batches: a free list, never more buffers
// than were in use at once, which credits bound. Buffers start with
// capacity for size bytes; one that grew beyond maxRetain(size) (a batch of
// huge records) is dropped when released rather than pinned for the
// channel's life.
//
// A SerializedPool is safe for concurrent use.
type SerializedPool struct {
	size int

	mu        sync.Mutex
	free      []*Serialized
	allocated int
}

// NewSerializedPool returns a pool of buffers of size bytes. It panics if
// size < 1: the size comes from validated configuration
// (taskmanager.memory.segment-size).
func NewSerializedPool(size int) *SerializedPool {
	if size < 1 {
		panic(fmt.Sprintf("network: serialized buffers of %d bytes: need at least 1", size))
	}
	return &SerializedPool{size: size}
}

// Size is the capacity new buffers get.
func (p *SerializedPool) Size() int { return p.size }

// Allocated is the number of buffers the pool created and did not drop: those
// in use plus those free. It stops growing once the channel reaches its
// steady state.
func (p *SerializedPool) Allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allocated
}

// Get returns an empty buffer (Bytes of length 0, Records 0) with capacity
// for at least n bytes, reusing a released one when it is big enough. A
// request above the pool's size gets a buffer of its own size.
func (p *SerializedPool) Get(n int) *Serialized {
	p.mu.Lock()
	if k := len(p.free); k > 0 && cap(p.free[k-1].Bytes) >= n {
		s := p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
		s.free = false
		p.mu.Unlock()
		return s
	}
	p.allocated++
	p.mu.Unlock()
	return &Serialized{Bytes: make([]byte, 0, max(n, p.size)), pool: p}
}

func (p *SerializedPool) put(s *Serialized) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.free {
		panic("network: serialized buffer released twice; a buffer has exactly one owner, and Release ends its ownership")
	}
	s.Bytes, s.Records = s.Bytes[:0], 0
	if cap(s.Bytes) > 4*p.size {
		p.allocated-- // dropped: a later Get allocates anew
		return
	}
	s.free = true
	p.free = append(p.free, s)
}

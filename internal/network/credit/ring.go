package credit

// ring is a growable FIFO of frame kinds. It grows by doubling and never
// shrinks: a channel's queue stays near its limit plus a few events.
type ring struct {
	buf   []bool
	head  int
	count int
}

func (r *ring) len() int { return r.count }

func (r *ring) push(v bool) {
	if r.count == len(r.buf) {
		n := make([]bool, max(4, 2*len(r.buf)))
		for i := 0; i < r.count; i++ {
			n[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = n, 0
	}
	r.buf[(r.head+r.count)%len(r.buf)] = v
	r.count++
}

// peek and pop must not be called on an empty ring.
func (r *ring) peek() bool { return r.buf[r.head] }

func (r *ring) pop() {
	r.head = (r.head + 1) % len(r.buf)
	r.count--
}

package network

// ring is a FIFO queue over a power-of-two circular slice. It grows when
// full and never shrinks, so in steady state push and pop do not allocate.
type ring[E any] struct {
	buf  []E
	head int // index of the oldest element
	n    int // number of elements
}

func newRing[E any](capacity int) ring[E] {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return ring[E]{buf: make([]E, c)}
}

func (r *ring[E]) len() int { return r.n }

func (r *ring[E]) push(e E) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

// pop removes and returns the oldest element; the ring must not be empty.
func (r *ring[E]) pop() E {
	var zero E
	e := r.buf[r.head]
	r.buf[r.head] = zero // drop the reference so a recycled batch is not pinned
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return e
}

// at returns the i-th oldest element.
func (r *ring[E]) at(i int) E { return r.buf[(r.head+i)&(len(r.buf)-1)] }

// removeFirst deletes the first element for which match is true, keeping the
// order of the others. It is O(n) and used only on cold paths (Block).
func (r *ring[E]) removeFirst(match func(E) bool) bool {
	_, ok := r.takeFirst(match)
	return ok
}

// takeFirst is removeFirst that also returns the removed element
// (Gate.Prioritize moves it elsewhere).
func (r *ring[E]) takeFirst(match func(E) bool) (E, bool) {
	var zero E
	for i := 0; i < r.n; i++ {
		e := r.at(i)
		if !match(e) {
			continue
		}
		mask := len(r.buf) - 1
		for j := i; j < r.n-1; j++ {
			r.buf[(r.head+j)&mask] = r.buf[(r.head+j+1)&mask]
		}
		r.buf[(r.head+r.n-1)&mask] = zero
		r.n--
		return e, true
	}
	return zero, false
}

func (r *ring[E]) grow() {
	c := 2 * len(r.buf)
	if c == 0 {
		c = 1
	}
	buf := make([]E, c)
	for i := 0; i < r.n; i++ {
		buf[i] = r.at(i)
	}
	r.buf, r.head = buf, 0
}

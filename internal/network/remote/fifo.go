package remote

// fifo is a FIFO queue over a power-of-two circular slice that grows when
// full and never shrinks, so steady-state push and pop do not allocate.
type fifo[E any] struct {
	buf  []E
	head int
	n    int
}

func (q *fifo[E]) len() int { return q.n }

func (q *fifo[E]) push(e E) {
	if q.n == len(q.buf) {
		nb := make([]E, max(4, 2*len(q.buf)))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = e
	q.n++
}

// peek returns the oldest element; the queue must not be empty.
func (q *fifo[E]) peek() *E { return &q.buf[q.head] }

// pop removes and returns the oldest element; the queue must not be empty.
func (q *fifo[E]) pop() E {
	var zero E
	e := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return e
}

// takeFirst removes and returns the oldest element matching match, moving
// the later ones up; O(n), for the cold path of Prioritize.
func (q *fifo[E]) takeFirst(match func(*E) bool) (E, bool) {
	var zero E
	mask := len(q.buf) - 1
	for i := range q.n {
		e := &q.buf[(q.head+i)&mask]
		if !match(e) {
			continue
		}
		out := *e
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)&mask] = q.buf[(q.head+j+1)&mask]
		}
		q.buf[(q.head+q.n-1)&mask] = zero
		q.n--
		return out, true
	}
	return zero, false
}

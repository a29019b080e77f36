package cluster

import (
	"net"
	"sync"
)

// handoffListener hands the connections of one bound listener to a
// sequence of servers: under high availability a JobManager keeps its rpc
// port for life, and serves it first with the standby server, then with a
// term's Dispatcher, then with the standby again when leadership is lost.
// A gRPC server closes the listener it serves when it stops; each server
// gets a view whose Close ends only that server's Accept, never the port.
//
// One goroutine accepts and offers each connection to the view that is
// open; a connection accepted while no view is open waits for the next
// one (a client's connect completes in the kernel meanwhile, and its first
// RPC waits).
type handoffListener struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // Accept's error once done is closed
}

func newHandoffListener(ln net.Listener) *handoffListener {
	h := &handoffListener{ln: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	go h.accept()
	return h
}

func (h *handoffListener) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			h.err = err
			close(h.done)
			return
		}
		h.conns <- c // a view takes it, or Close drains it
	}
}

// view returns a listener for one server: it takes connections until its
// Close.
func (h *handoffListener) view() net.Listener {
	return &listenerView{h: h, closed: make(chan struct{})}
}

// Close closes the port; connections not yet taken are closed.
func (h *handoffListener) Close() error {
	err := h.ln.Close()
	h.once.Do(func() {
		go func() {
			for {
				select {
				case c := <-h.conns:
					c.Close()
				case <-h.done:
					return
				}
			}
		}()
	})
	return err
}

type listenerView struct {
	h      *handoffListener
	closed chan struct{}
	once   sync.Once
}

func (v *listenerView) Accept() (net.Conn, error) {
	select {
	case c := <-v.h.conns:
		select {
		case <-v.closed:
			// Closed while the connection arrived: leave it to the next
			// view rather than to a server that stops.
			go func() {
				select {
				case v.h.conns <- c:
				case <-v.h.done:
					c.Close()
				}
			}()
			return nil, net.ErrClosed
		default:
		}
		return c, nil
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.h.done:
		return nil, v.h.err
	}
}

func (v *listenerView) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *listenerView) Addr() net.Addr { return v.h.ln.Addr() }

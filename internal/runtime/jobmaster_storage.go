package runtime

// storeWorker performs the JobMaster's storage actions off its loop, one
// at a time in the order given: metadata writes, LoadLatest, savepoint
// copies, retention and shared-file GC, checkpoint-id reservations. The
// Machine relies on the order (a savepoint copy comes before the Retain
// that may remove its checkpoint); the loop never waits for it except at
// the job's end, for the last discards and sweep. Its queue is the same
// unbounded queue as the inbox, so handing work over never blocks.
type storeWorker struct {
	q    *queue[func()]
	done chan struct{}
}

func startStoreWorker() *storeWorker {
	w := &storeWorker{q: newQueue[func()](), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *storeWorker) run() {
	defer close(w.done)
	var fs []func()
	for range w.q.ready {
		fs = w.q.take(fs[:0])
		for _, f := range fs {
			if f == nil {
				return
			}
			f()
		}
	}
}

// do queues f.
func (w *storeWorker) do(f func()) { w.q.put(f) }

// drain waits until everything queued so far was performed; the worker
// then runs on.
func (w *storeWorker) drain() {
	done := make(chan struct{})
	w.q.put(func() { close(done) })
	<-done
}

// stop ends the worker after what is queued and waits for it.
func (w *storeWorker) stop() {
	w.q.put(nil)
	<-w.done
}

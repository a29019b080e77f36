package cluster

// allocate places a job's logical slots and returns the session of the
// TaskManager each runs on, all under the Dispatcher's lock, so no slot
// refers to a TaskManager that is already gone. shortage describes why
// nothing was allocated ("" on success).
func (d *Dispatcher) allocate(job string, logical []int) (placed map[int]*TaskManager, shortage string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	refs, ok := d.pool.Allocate(job, logical)
	if !ok {
		return nil, d.pool.Shortage(job, logical).String()
	}
	placed = make(map[int]*TaskManager, len(refs))
	for l, r := range refs {
		placed[l] = d.sessions[r.TM]
	}
	return placed, ""
}

// release frees the job's slots.
func (d *Dispatcher) release(job string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.Release(job)
}

// sessionList returns the current sessions.
func (d *Dispatcher) sessionList() []*TaskManager {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*TaskManager, 0, len(d.sessions))
	for _, tm := range d.sessions {
		out = append(out, tm)
	}
	return out
}

// live reports whether tm is a current session.
func (d *Dispatcher) live(tm *TaskManager) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions[tm.ID] == tm
}

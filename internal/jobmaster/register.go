package jobmaster

import (
	"github.com/weirstream/weir/internal/checkpoint"
)

// Checkpoint registration (Config.Register, high availability): a
// checkpoint whose metadata is written is complete only once its pointer
// is registered, by a transaction fenced on the leader's term. A JobManager
// that lost leadership, or crashed between the two, leaves a metadata file
// nobody registered: no restore uses it, and no TaskManager was told of it,
// so no sink committed on its word.
//
//	PersistMetadata → StoreDone{nil} → RegisterCheckpoint → Registered{nil} → NotifyComplete, Retain
//
// The coordinator keeps the checkpoint persisting until Registered, so
// everything that waits for metadata writes in flight (a restart's
// LoadLatest, the job's end, a held final notification) waits for the
// registration too: persisting counts both.

// storeDone handles the result of a metadata write. Without registration
// (or when the write failed) it ends the checkpoint's persisting: the
// coordinator completes or fails it. With registration a written
// checkpoint is registered first.
func (m *Machine) storeDone(ev StoreDone) {
	kind, registering := m.persistKind[ev.ID]
	delete(m.persistKind, ev.ID)
	if !m.cfg.Register || !registering || ev.Err != nil {
		m.persisted(ev.ID, ev.Err, false)
		return
	}
	if ev.ID < m.coord.Stats().LastCompletedID {
		// A newer checkpoint completed while this one was written: the
		// coordinator drops it as subsumed and its files are discarded, so
		// its pointer would only point at files being deleted.
		m.persisted(ev.ID, nil, false)
		return
	}
	m.emit(RegisterCheckpoint{ID: ev.ID, Kind: kind})
}

// registered handles the result of a registration: only a successful one
// completes the checkpoint; a refused one (lost leadership, etcd down) is
// a failed checkpoint, exactly as a failed metadata write is, and its
// files are discarded. It is not a storage failure (the coordinator
// counts it towards the tolerable failures): the leadership is in
// question, not the storage.
func (m *Machine) registered(ev Registered) {
	err := ev.Err
	if err != nil {
		m.log.Warn("checkpoint registration refused", "id", ev.ID, "err", err)
		err = m.mode.registrationError(err)
	}
	m.persisted(ev.ID, err, err != nil)
}

// persisted ends a checkpoint's persisting: one write (and registration)
// less in flight, the coordinator told, and a restart that waited for it
// asks for its restore point.
func (m *Machine) persisted(id checkpoint.ID, err error, registration bool) {
	m.persisting--
	m.mode.persisted(id, err, registration)
	m.restartDue()
}

package jobstatus

import "time"

// Reset returns the status to the state of a job not yet started, for
// another run of the same weir.Env: its counters, history, vertices and
// state start over, so the new run's figures are its own. Nothing may run
// on it while it resets; a pending command is not affected (it waits in
// the job's Control, and nothing serves it until the next attempt runs).
func (r *Recorder) Reset() {
	s := r.Status()
	s.SourceRecords.Store(0)
	s.Restarts.Store(0)
	s.LostTransactions.Store(0)
	s.CompletedCheckpoints.Store(0)
	s.FailedCheckpoints.Store(0)
	s.FailedStorage.Store(0)
	for i := range s.failedByCause {
		s.failedByCause[i].Store(0)
	}
	s.StorageFailing.Store(false)
	s.LastCheckpointID.Store(0)
	s.LastCheckpointDuration.Store(0)
	s.LastCheckpointSize.Store(0)
	s.LastCheckpointFullSize.Store(0)
	s.LastCheckpointAlignmentBuffered.Store(0)
	s.LastCheckpointProcessedData.Store(0)
	s.LastCheckpointPersistedData.Store(0)
	s.RestoredCheckpoint.Store(0)
	s.RestoredChannelStateBytes.Store(0)
	s.RemoteBytesSent.Store(0)
	s.RemotePrioritizedBarriers.Store(0)
	s.RecordedRemoteChannelStateBytes.Store(0)
	s.RestoredRemoteChannelStateBytes.Store(0)
	s.LastRestoreTimestamp.Store(0)
	s.LastRestoreDuration.Store(0)
	s.AutoscalerRescales.Store(0)
	s.ReactiveRescales.Store(0)
	s.lastFailure.Store(nil)

	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = StateCreated
	m.started, m.ended = time.Time{}, time.Time{}
	m.history = nil
	m.taskSource = nil
	m.vertices = nil
	m.numTasks = 0
	m.restoreAttempt = 0
	m.autoscaler, m.autoscaling = nil, false
	m.reactiveLog, m.reactive = nil, false
}

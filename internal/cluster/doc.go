// Package cluster holds the JobManager's and TaskManager's cluster-mode
// machinery (docs/design/cluster.md): the control plane over gRPC and the
// pure parts it is built from.
//
//   - SlotPool (slotpool.go): the Dispatcher's ledger of the slots
//     TaskManagers offer and the jobs' logical slots placed on them.
//     Allocation is all or nothing and spreads a job over the TaskManagers
//     (cluster.evenly-spread-out-slots), so killing any TaskManager hits
//     work and no TaskManager carries more than its share.
//   - Dispatcher (dispatcher.go, tmsession.go): the JobManager's gRPC
//     server. Each TaskManager opens one Connect stream, registers (refused
//     for another protocol version, another build or zero slots), offers
//     its slots and answers heartbeats; the session ends when the stream
//     breaks, heartbeats stop for heartbeat.timeout, its outbound queue
//     overflows or the TaskManager registers again. Registrations, gateway
//     messages and losses reach the JobMaster layer through callbacks.
//   - RunTaskManager (taskmanager_client.go): the TaskManager's side. It
//     registers, answers heartbeats, hands gateway messages to a
//     TaskManagerHandler (the TaskExecutor), notices a lost JobManager and
//     registers again with backoff until taskmanager.registration.timeout.
//   - leader.go, fence.go: high availability on the TaskManagers' and
//     clients' side. Both take several candidate JobManagers (a list, or
//     Locate asking etcd) and follow a standby's pointer to the leader
//     (NOT_LEADER for Register, LeaderRPCHeader on client RPCs). A
//     TaskManager fences: a session or message of an older leader term
//     than the newest it has seen is refused (ErrStaleLeader), and a newer
//     term from LeaderTerms ends the current session (ErrNewLeader).
//   - version.go: ProtocolVersion, the build id, and the interceptors that
//     refuse clients of another protocol version.
//
// The pure types take events (an offer, a lost TaskManager, "seen at t")
// and return results; they read no clock and touch no socket. The session
// code that owns them calls them under one lock and feeds them the time.
// Neither side ever blocks on a peer to send: messages go into a bounded
// per-session queue (outbox.go) drained by one writer goroutine.
//
//	d, _ := cluster.StartDispatcher("127.0.0.1:6123", cluster.DispatcherConfig{
//		BuildID:           id,
//		OnTaskManagerLost: func(tm *cluster.TaskManager, reason error, slots []cluster.JobSlots) { … },
//	})
//	defer d.Stop()
//
//	err := cluster.RunTaskManager(ctx, cluster.TaskManagerConfig{
//		JobManager: "127.0.0.1:6123", ResourceID: "tm-3f9c1a", Slots: 2, BuildID: id, Handler: executor,
//	}) // returns on ctx end, a rejection, or an unreachable JobManager
//
// The SlotPool alone:
//
//	p := cluster.NewSlotPool()
//	p.Offer("tm-a", 2)
//	p.Offer("tm-b", 2)
//	slots, ok := p.Allocate("demo", []int{0, 1, 2}) // 0→tm-a#0 1→tm-b#0 2→tm-a#1
//	lost := p.Lost("tm-b")                         // [{demo [1]}]: redeploy logical slot 1
//	if _, ok := p.Allocate("demo", []int{1}); !ok {
//		log(p.Shortage("demo", []int{1}).Waiting(5 * time.Minute))
//	}
//
// Owns: the cluster's processes: the JobManager (dispatcher, job records,
// client RPCs, REST), TaskManager sessions and registration, the
// control-plane protocol and slot pool. Must not touch: the job's rules
// (the JobMaster runs unchanged behind gateways) or the data plane
// (internal/network/remote).
package cluster

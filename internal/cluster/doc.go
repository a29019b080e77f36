// Package cluster holds the JobManager's and TaskManager's cluster-mode
// machinery (docs/design/cluster.md). So far it holds the pure parts the
// control plane is built from:
//
//   - SlotPool (slotpool.go): the Dispatcher's ledger of the slots
//     TaskManagers offer and the jobs' logical slots placed on them.
//     Allocation is all or nothing and spreads a job over the TaskManagers
//     (cluster.evenly-spread-out-slots), so killing any TaskManager hits
//     work and no TaskManager carries more than its share.
//
// Like the coordinator and the failover handler, these types take events
// (an offer, a lost TaskManager, an allocation request) and return results;
// they read no clock and touch no socket. The session loop that owns one
// calls it from one goroutine.
//
//	p := cluster.NewSlotPool()
//	p.Offer("tm-a", 2)
//	p.Offer("tm-b", 2)
//	slots, ok := p.Allocate("demo", []int{0, 1, 2}) // 0→tm-a#0 1→tm-b#0 2→tm-a#1
//	lost := p.Lost("tm-b")                         // [{demo [1]}]: redeploy logical slot 1
//	if _, ok := p.Allocate("demo", []int{1}); !ok {
//		log(p.Shortage("demo", []int{1}).Waiting(5 * time.Minute))
//	}
package cluster

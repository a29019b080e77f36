package deployment

// Placement is where one logical slot of a job runs in cluster mode: a
// TaskManager and the address of its data plane.
type Placement struct {
	TM          TaskManagerGateway
	DataAddress string
}

// Slots gives a cluster-mode JobMaster TaskManagers for its logical slots
// (slot sharing: logical slot i runs subtask i of every vertex). The
// JobManager implements it over its slot pool.
type Slots interface {
	// Allocate places the logical slots, all or none. A logical slot the
	// job holds already keeps its place. When too few slots are free it
	// returns shortage, a description such as "job demo needs 4 slots, 2
	// free on 1 TaskManager", and the JobMaster waits for
	// runtime.ClusterJob.SlotsChanged.
	Allocate(logical []int) (placed map[int]Placement, shortage string)
	// Release frees every slot of the job: it ended.
	Release()
}

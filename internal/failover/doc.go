// Package failover computes what fails together. Regions splits a job's
// subtasks into pipelined regions, as Flink's region failover strategy does
// for streaming jobs: subtasks exchanging data are in one region, so a
// failure restarts its region from the newest completed checkpoint while
// the other regions run on. No data flows between regions, so one region
// restored to checkpoint N beside others past N is still consistent.
//
// A Forward edge between vertices of equal parallelism connects subtask i
// of the producer with subtask i of the consumer only; every other edge
// (hash, rebalance, broadcast, or a forward edge between different
// parallelisms) connects every producer subtask with every consumer
// subtask and so joins both vertices' subtasks into one region.
//
// Walkthrough, source(2) -forward-> map(2) -hash-> sink(2) and a
// forward-only pipeline a(2) -forward-> b(2):
//
//	regions := failover.Regions(jg)
//	// [[{0 0} {0 1} {1 0} {1 1} {2 0} {2 1}]  the keyed pipeline
//	//  [{3 0} {4 0}]                          a and b, subtask 0
//	//  [{3 1} {4 1}]]                         a and b, subtask 1
//	idx := failover.RegionIndex(regions)
//	idx[checkpoint.TaskID{Vertex: 4, Subtask: 1}] // 2: restart region 2
//
// Each region is sorted by TaskID (vertex, then subtask) and regions are
// numbered by their smallest TaskID, so the numbering is deterministic.
package failover

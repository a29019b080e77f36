package runtime

import (
	"github.com/weirstream/weir/internal/jobmaster"

	"github.com/weirstream/weir/internal/deployment"
)

// gatewayPlacement is the driver's side of jobmaster.Placement: it places
// logical slots for the Machine and maps the Machine's TaskManagers to
// gateways and back. Local and cluster mode differ only here.
type gatewayPlacement interface {
	jobmaster.Placement
	// gateway returns TaskManager tm's gateway.
	gateway(tm jobmaster.TM) deployment.TaskManagerGateway
	// tmOf returns the TaskManager a gateway was handed out as.
	tmOf(gw deployment.TaskManagerGateway) (jobmaster.TM, bool)
	// initial returns the TaskManagers prepared at the start.
	initial() []jobmaster.TM
}

// gateways numbers TaskManager gateways for the Machine.
type gateways struct {
	gws []deployment.TaskManagerGateway
	ids map[deployment.TaskManagerGateway]jobmaster.TM
}

func (g *gateways) gateway(tm jobmaster.TM) deployment.TaskManagerGateway { return g.gws[tm] }

func (g *gateways) tmOf(gw deployment.TaskManagerGateway) (jobmaster.TM, bool) {
	tm, ok := g.ids[gw]
	return tm, ok
}

// add returns gw's number, giving it the next one if it has none.
func (g *gateways) add(gw deployment.TaskManagerGateway) jobmaster.TM {
	if tm, ok := g.ids[gw]; ok {
		return tm
	}
	if g.ids == nil {
		g.ids = map[deployment.TaskManagerGateway]jobmaster.TM{}
	}
	tm := jobmaster.TM(len(g.gws))
	g.gws = append(g.gws, gw)
	g.ids[gw] = tm
	return tm
}

// localPlacement is local mode's: logical slot i lives on executor
// i mod n, every executor is prepared at the start, and slots never run
// short.
type localPlacement struct {
	gateways
	addr []string
}

func newLocalPlacement(executors []deployment.TaskManagerGateway) *localPlacement {
	p := &localPlacement{}
	for _, te := range executors {
		p.add(te)
		p.addr = append(p.addr, dataAddressOf(te))
	}
	return p
}

func (p *localPlacement) Place(logical []int) (map[int]jobmaster.Slot, string) {
	out := make(map[int]jobmaster.Slot, len(logical))
	for _, l := range logical {
		i := l % len(p.gws)
		out[l] = jobmaster.Slot{TM: jobmaster.TM(i), Address: p.addr[i]}
	}
	return out, ""
}

func (p *localPlacement) initial() []jobmaster.TM {
	tms := make([]jobmaster.TM, len(p.gws))
	for i := range tms {
		tms[i] = jobmaster.TM(i)
	}
	return tms
}

// slotPlacement is cluster mode's: the JobManager's slot pool places the
// logical slots, and each TaskManager session it hands out is prepared
// before its first deployment.
type slotPlacement struct {
	gateways
	slots deployment.Slots
}

func (p *slotPlacement) Place(logical []int) (map[int]jobmaster.Slot, string) {
	placed, shortage := p.slots.Allocate(logical)
	if shortage != "" {
		return nil, shortage
	}
	out := make(map[int]jobmaster.Slot, len(placed))
	for l, pl := range placed {
		out[l] = jobmaster.Slot{TM: p.add(pl.TM), Address: pl.DataAddress}
	}
	return out, ""
}

func (p *slotPlacement) initial() []jobmaster.TM { return nil }

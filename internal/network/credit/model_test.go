package credit

import (
	"math/rand"
	"slices"
	"testing"
)

// frame is what the simulated wire carries from producer to consumer.
type frame struct {
	id      int
	seq     uint64
	isData  bool
	backlog int
}

// channelSim runs both ledgers over two FIFO wires, beside a naive model
// that keeps every frame in plain slices and derives counts from them.
type channelSim struct {
	t       *testing.T
	credits int
	s       *Sender
	r       *Receiver

	queue    []frame // pushed, not popped (the model of the sender's queue)
	wire     []frame // popped, not accepted
	held     []int   // accepted data ids, not freed, in arrival order
	creditsW []int   // AddCredit frames in flight
	pushed   []int   // ids in push order
	got      []int   // ids in acceptance order
	nextID   int
	limit    int
	modelCr  int // sender credit per the model: initial - data popped + AddCredit applied
}

func (c *channelSim) push(isData bool) {
	ok := c.s.Push(isData)
	dataQueued := 0
	for _, f := range c.queue {
		if f.isData {
			dataQueued++
		}
	}
	if want := !isData || dataQueued < c.limit; ok != want {
		c.t.Fatalf("Push(%v) = %v with %d data queued of %d", isData, ok, dataQueued, c.limit)
	}
	if ok {
		c.queue = append(c.queue, frame{id: c.nextID, isData: isData})
		c.pushed = append(c.pushed, c.nextID)
		c.nextID++
	}
}

func (c *channelSim) pop() {
	isData, ok := c.s.Pop()
	if len(c.queue) == 0 || (c.queue[0].isData && c.modelCr == 0) {
		if ok {
			c.t.Fatalf("Pop() = (%v, true), model has nothing sendable", isData)
		}
		return
	}
	f := c.queue[0]
	if !ok || isData != f.isData {
		c.t.Fatalf("Pop() = (%v, %v), model head data=%v credit %d", isData, ok, f.isData, c.modelCr)
	}
	c.queue = c.queue[1:]
	if isData {
		c.modelCr--
	}
	f.seq = c.s.Sent() - 1
	f.backlog = c.s.Backlog()
	c.wire = append(c.wire, f)
}

func (c *channelSim) deliver() {
	if len(c.wire) == 0 {
		return
	}
	f := c.wire[0]
	c.wire = c.wire[1:]
	if err := c.r.Accept(f.seq, f.isData, f.backlog); err != nil {
		c.t.Fatalf("Accept of frame %+v: %v", f, err)
	}
	c.got = append(c.got, f.id)
	if f.isData {
		c.held = append(c.held, f.id)
	}
}

func (c *channelSim) free() {
	if len(c.held) == 0 {
		return
	}
	c.held = c.held[1:]
	c.r.Freed()
}

func (c *channelSim) announce() {
	if n := c.r.Announce(); n > 0 {
		c.creditsW = append(c.creditsW, n)
	}
}

func (c *channelSim) grant() {
	if len(c.creditsW) == 0 {
		return
	}
	n := c.creditsW[0]
	c.creditsW = c.creditsW[1:]
	if err := c.s.AddCredit(n); err != nil {
		c.t.Fatalf("AddCredit(%d): %v", n, err)
	}
	c.modelCr += n
}

func (c *channelSim) checkInvariants() {
	c.t.Helper()
	dataQueued, dataWire := 0, 0
	for _, f := range c.queue {
		if f.isData {
			dataQueued++
		}
	}
	for _, f := range c.wire {
		if f.isData {
			dataWire++
		}
	}
	creditWire := 0
	for _, n := range c.creditsW {
		creditWire += n
	}
	if c.s.Credit() != c.modelCr || c.s.Backlog() != dataQueued || c.s.Queued() != len(c.queue) {
		c.t.Fatalf("sender credit %d backlog %d queued %d, model %d %d %d",
			c.s.Credit(), c.s.Backlog(), c.s.Queued(), c.modelCr, dataQueued, len(c.queue))
	}
	if c.r.Held() != len(c.held) || c.r.Outstanding() != c.s.Credit()+dataWire+creditWire {
		c.t.Fatalf("receiver held %d outstanding %d, model %d %d",
			c.r.Held(), c.r.Outstanding(), len(c.held), c.s.Credit()+dataWire+creditWire)
	}
	for name, v := range map[string]int{"credit": c.s.Credit(), "backlog": c.s.Backlog(), "held": c.r.Held(),
		"unannounced": c.r.Unannounced(), "outstanding": c.r.Outstanding()} {
		if v < 0 {
			c.t.Fatalf("%s = %d is negative", name, v)
		}
	}
	if dataWire+len(c.held) > c.credits {
		c.t.Fatalf("%d data in flight + %d held exceeds %d credits", dataWire, len(c.held), c.credits)
	}
	if sum := c.s.Credit() + dataWire + c.r.Held() + c.r.Unannounced() + creditWire; sum != c.credits {
		c.t.Fatalf("credits not conserved: sender %d + wire %d + held %d + unannounced %d + AddCredit %d = %d, want %d",
			c.s.Credit(), dataWire, c.r.Held(), c.r.Unannounced(), creditWire, sum, c.credits)
	}
}

// TestModel runs random interleavings of all operations and then drains the
// channel: every frame pushed must arrive exactly once and in order.
func TestModel(t *testing.T) {
	const seed = 20261129
	rng := rand.New(rand.NewSource(seed))
	for run := 0; run < 300; run++ {
		credits, limit := 1+rng.Intn(4), 1+rng.Intn(5)
		c := &channelSim{t: t, credits: credits, limit: limit,
			s: NewSender(limit, credits), r: NewReceiver(credits), modelCr: credits}
		dataBias := rng.Float64()
		for step := 0; step < 400; step++ {
			switch rng.Intn(6) {
			case 0:
				c.push(rng.Float64() < dataBias)
			case 1:
				c.pop()
			case 2:
				c.deliver()
			case 3:
				c.free()
			case 4:
				c.announce()
			case 5:
				c.grant()
			}
			c.checkInvariants()
			// Events never wait for credit: an event at the head always pops.
			if len(c.queue) > 0 && !c.queue[0].isData {
				c.pop()
				c.checkInvariants()
			}
		}
		for i := 0; len(c.queue)+len(c.wire)+len(c.held)+len(c.creditsW)+c.r.Unannounced() > 0; i++ {
			if i > 10000 {
				t.Fatalf("seed %d run %d: channel does not drain", seed, run)
			}
			c.pop()
			c.deliver()
			c.free()
			c.announce()
			c.grant()
			c.checkInvariants()
		}
		if !slices.Equal(c.got, c.pushed) {
			t.Fatalf("seed %d run %d: received %v, pushed %v", seed, run, c.got, c.pushed)
		}
		if c.s.Credit() != credits || c.r.Outstanding() != credits {
			t.Fatalf("seed %d run %d: drained with sender credit %d, receiver outstanding %d, want %d",
				seed, run, c.s.Credit(), c.r.Outstanding(), credits)
		}
	}
}

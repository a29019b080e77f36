package network

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

// dataBuf wraps the records vs into a Data buffer from pool p.
func dataBuf(p *Pool[int], vs ...int) Buffer {
	b := p.Get()
	b.Records = append(b.Records, vs...)
	return Buffer{Kind: Data, Data: b}
}

func barrier(id checkpoint.ID) Buffer {
	return Buffer{Kind: Barrier, Barrier: checkpoint.Barrier{ID: id}}
}

// describe renders a polled buffer as "ch:kind[payload]" and recycles data.
func describe(ch int, b Buffer) string {
	switch b.Kind {
	case Data:
		batch := b.Data.(*Batch[int])
		s := fmt.Sprintf("%d:data%v", ch, batch.Records)
		if batch.Times != nil {
			s += fmt.Sprintf("t%v", batch.Times)
		}
		batch.Recycle()
		return s
	case Barrier:
		return fmt.Sprintf("%d:barrier%d", ch, b.Barrier.ID)
	case CancelBarrier:
		return fmt.Sprintf("%d:cancel%d", ch, b.Cancel)
	case Watermark:
		return fmt.Sprintf("%d:wm%d", ch, b.Watermark)
	case WatermarkStatus:
		if b.Idle {
			return fmt.Sprintf("%d:idle", ch)
		}
		return fmt.Sprintf("%d:active", ch)
	}
	return fmt.Sprintf("%d:%s", ch, b.Kind)
}

// drain polls until the gate has nothing pollable and returns the buffers
// in poll order, joined by spaces.
func drain(g *Gate) string {
	var out []string
	for ch, b, ok := g.Poll(); ok; ch, b, ok = g.Poll() {
		out = append(out, describe(ch, b))
	}
	return strings.Join(out, " ")
}

func mustSend(t *testing.T, c *Channel, b Buffer) {
	t.Helper()
	if err := c.Send(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

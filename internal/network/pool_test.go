package network

import (
	"testing"
)

func TestPoolReusesBatchesAndKeepsCapacity(t *testing.T) {
	p := NewPool[int](4)
	b := p.Get()
	if len(b.Records) != 0 || cap(b.Records) != 4 {
		t.Fatalf("new batch len %d cap %d, want 0 and 4", len(b.Records), cap(b.Records))
	}
	b.Records = append(b.Records, 1, 2, 3)
	backing := &b.Records[:1][0]
	b.Recycle()
	if *backing != 0 {
		t.Fatalf("recycled records not cleared: %d", *backing)
	}
	b2 := p.Get()
	if b2 != b || len(b2.Records) != 0 || cap(b2.Records) != 4 {
		t.Fatalf("got batch %p len %d cap %d, want the recycled %p, len 0, cap 4", b2, len(b2.Records), cap(b2.Records), b)
	}
	b3 := p.Get()
	if b3 == b2 {
		t.Fatal("one batch handed out twice")
	}
	if got := p.Allocated(); got != 2 {
		t.Fatalf("allocated %d batches, want 2", got)
	}
}

func TestDoubleRecyclePanics(t *testing.T) {
	p := NewPool[int](1)
	b := p.Get()
	b.Recycle()
	defer func() {
		if recover() == nil {
			t.Fatal("second Recycle did not panic")
		}
	}()
	b.Recycle()
}

func TestBatchWithoutPoolRecyclesToNothing(t *testing.T) {
	b := &Batch[int]{Records: []int{1}}
	b.Recycle() // must not panic
	if len(b.Records) != 1 {
		t.Fatal("a batch without pool was modified")
	}
}

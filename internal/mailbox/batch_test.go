package mailbox

import (
	"sync/atomic"
	"testing"
	"time"
)

// Messages enqueued to a Batch wait until Schedule; then every mailbox it gathered runs,
// each in order, on as many workers as were asleep — and a mailbox already runnable is not
// gathered twice.
func TestBatchSchedulesTogether(t *testing.T) {
	p := newPool(t, Config{Workers: 4, Throughput: 2})
	g := newGroup[int](t, p, GroupConfig{})
	const boxes, each = 50, 7
	var handled atomic.Int64
	done := make(chan struct{})
	mbs := make([]Mailbox[int], boxes)
	got := make([][]int, boxes)
	for i := range mbs {
		mbs[i].Init(g, funcs[int]{t: t, receive: func(v int) {
			got[i] = append(got[i], v)
			if handled.Add(1) == boxes*each {
				close(done)
			}
		}})
	}
	var b Batch
	for v := range each {
		for i := range mbs {
			if err := mbs[i].EnqueueTo(&b, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(b.runners) != boxes {
		t.Fatalf("the batch gathered %d mailboxes, want %d (each once)", len(b.runners), boxes)
	}
	// Nothing runs before Schedule: no worker can know of the mailboxes.
	p.mu.Lock()
	queued := p.queue.n
	p.mu.Unlock()
	if queued != 0 || handled.Load() != 0 {
		t.Fatalf("before Schedule: %d mailboxes on the run queue, %d messages handled", queued, handled.Load())
	}
	b.Schedule()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of %d messages handled after Schedule", handled.Load(), boxes*each)
	}
	for i, vs := range got {
		for v := range each {
			if vs[v] != v {
				t.Fatalf("mailbox %d handled %v, want 0..%d in order", i, vs, each-1)
			}
		}
	}
	if len(b.runners) != 0 {
		t.Fatal("Schedule left runners in the batch")
	}
}

// A Batch given mailboxes of two pools schedules those of the first before it takes the
// second's.
func TestBatchAcrossPools(t *testing.T) {
	p1, p2 := newPool(t, Config{Workers: 1}), newPool(t, Config{Workers: 1})
	ran := make(chan int, 2)
	var a, c Mailbox[int]
	a.Init(newGroup[int](t, p1, GroupConfig{}), funcs[int]{t: t, receive: func(v int) { ran <- v }})
	c.Init(newGroup[int](t, p2, GroupConfig{}), funcs[int]{t: t, receive: func(v int) { ran <- v }})
	var b Batch
	if err := a.EnqueueTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueTo(&b, 2); err != nil { // schedules a's pool's mailbox first
		t.Fatal(err)
	}
	select {
	case v := <-ran:
		if v != 1 {
			t.Fatalf("ran %d first", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first pool's mailbox did not run when the batch moved on to another pool")
	}
	b.Schedule()
	if v := <-ran; v != 2 {
		t.Fatalf("ran %d second", v)
	}
}

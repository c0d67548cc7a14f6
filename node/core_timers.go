package node

import (
	"container/heap"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

// In-memory timers of entity incarnations (Akka's TimerScheduler): kept by the core and
// fired by its clock (Tick) into the incarnation's mailbox, never through the shard (a
// timer's message does not start an entity). They die with the incarnation: a timer whose
// incarnation ended is dropped when it comes due, and a message of a timer cancelled or
// replaced after it was queued is dropped by the incarnation (EntityContext keeps each
// key's generation). A cancelled or replaced timer leaves the heap at once: an entity that
// re-arms a long timer on every message (an idle timeout) keeps one entry, not one per
// message.

// coreTimers is the heap of timers by due time.
type coreTimers struct {
	h   timerHeap
	seq uint64 // ties broken in order of arming: the same order every run
	// live: the armed timer of each incarnation and key, to cancel or replace it.
	live map[timerID]*coreTimer
}

type timerID struct {
	inc Incarnation
	key string
}

type coreTimer struct {
	op  TimerOp
	due time.Time
	seq uint64
	idx int // its index in the heap
}

// timerOp arms or cancels a timer.
func (c *Core) timerOp(now time.Time, op TimerOp) {
	ts := &c.timers
	id := timerID{op.Inc, op.Key}
	if old := ts.live[id]; old != nil {
		heap.Remove(&ts.h, old.idx)
		delete(ts.live, id)
	}
	if op.Cancel {
		return
	}
	if ts.live == nil {
		ts.live = map[timerID]*coreTimer{}
	}
	ts.seq++
	t := &coreTimer{op: op, due: now.Add(op.After), seq: ts.seq}
	ts.live[id] = t
	heap.Push(&ts.h, t)
}

// tickTimers queues the messages of the timers that are due in their incarnations.
func (c *Core) tickTimers(now time.Time) {
	ts := &c.timers
	for len(ts.h) > 0 && !now.Before(ts.h[0].due) {
		t := heap.Pop(&ts.h).(*coreTimer)
		op := t.op
		id := timerID{op.Inc, op.Key}
		if !c.runs(op.Type, op.Shard, op.Entity, op.Inc) {
			delete(ts.live, id) // the incarnation ended: its timers die with it
			continue
		}
		if err := op.Inc.Enqueue(&Message{value: op.Msg, ext: &msgExt{timer: &timerMark{key: op.Key, gen: op.Gen, periodic: op.Every > 0}}}); err != nil {
			delete(ts.live, id)
			continue
		}
		if op.Every <= 0 {
			delete(ts.live, id)
			continue
		}
		t.due = t.due.Add(op.Every)
		if !t.due.After(now) { // a slow tick: no burst of missed periods
			t.due = now.Add(op.Every)
		}
		ts.seq++
		t.seq = ts.seq
		heap.Push(&ts.h, t)
	}
}

// runs reports whether inc is the live incarnation of the entity (its shard keeps it with
// the entity's record).
func (c *Core) runs(typ string, s shard.ID, e shard.EntityID, inc Incarnation) bool {
	slot := c.eng.Slot(typ, s, e)
	return slot != nil && slot.Runtime == inc
}

// timerHeap orders timers by due time, then by arming.
type timerHeap []*coreTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*coreTimer)
	t.idx = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

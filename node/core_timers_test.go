package node

import (
	"testing"
	"time"
)

// TestTimersReArmedKeepOneEntry: an entity that re-arms a long timer on every message (an
// idle timeout) keeps one entry in the core's heap, and a cancel leaves none; the heap
// stays ordered by due time.
func TestTimersReArmedKeepOneEntry(t *testing.T) {
	c := &Core{}
	now := time.Unix(0, 0)
	for i := range 10_000 {
		c.timerOp(now.Add(time.Duration(i)*time.Millisecond), TimerOp{Type: "t", Entity: "e", Key: "idle", After: time.Hour})
	}
	c.timerOp(now, TimerOp{Type: "t", Entity: "e", Key: "soon", After: time.Second})
	if n := len(c.timers.h); n != 2 {
		t.Fatalf("%d timers in the heap after re-arming one key 10,000 times and arming another, want 2", n)
	}
	if k := c.timers.h[0].op.Key; k != "soon" {
		t.Fatalf("first due: %s, want soon", k)
	}
	c.timerOp(now, TimerOp{Type: "t", Entity: "e", Key: "idle", Cancel: true})
	if n, k := len(c.timers.h), c.timers.h[0].op.Key; n != 1 || k != "soon" || len(c.timers.live) != 1 {
		t.Fatalf("after the cancel: %d in the heap (first %s), %d live; want soon alone", n, k, len(c.timers.live))
	}
}

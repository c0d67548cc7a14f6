package trust

import (
	"slices"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

func items(hs []Held[int]) []int {
	out := make([]int, len(hs))
	for i, h := range hs {
		out[i] = h.Item
	}
	return out
}

// TestWaiting: what a peer sent before it was admitted comes back in arrival order once it
// is, or expires after AdmitGrace; the bounds refuse the rest at once.
func TestWaiting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w Waiting[int]
	for i, from := range []membership.NodeID{"a", "b", "a", "c"} {
		if !w.Hold(t0.Add(time.Duration(i)*100*time.Millisecond), from, i, 10) {
			t.Fatalf("item %d not held", i)
		}
	}
	if d := w.Deadline(); !d.Equal(t0.Add(AdmitGrace)) {
		t.Fatalf("deadline %v", d)
	}
	if got := items(w.Release(func(id membership.NodeID) bool { return id == "a" })); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("released %v, want a's items in order", got)
	}
	if got := items(w.Expire(t0.Add(100*time.Millisecond + AdmitGrace))); !slices.Equal(got, []int{1}) {
		t.Fatalf("expired %v at the grace of b's item, want it alone", got)
	}
	if got := items(w.Expire(t0.Add(time.Hour))); !slices.Equal(got, []int{3}) || w.Len() != 0 || !w.Deadline().IsZero() {
		t.Fatalf("expired %v, %d left", got, w.Len())
	}

	// One peer fills at most its share; the bytes are bounded too.
	for i := range maxWaitingPerPeer {
		if !w.Hold(t0, "flood", i, 1) {
			t.Fatalf("item %d of a peer refused below its bound", i)
		}
	}
	if w.Hold(t0, "flood", 0, 1) {
		t.Fatal("a peer holds more than its share")
	}
	if !w.Hold(t0, "other", 0, 1) || w.Hold(t0, "other", 1, maxWaitingBytes) {
		t.Fatal("the byte bound is not kept, or another peer was refused for the first one")
	}
	w.Release(func(membership.NodeID) bool { return true })
	if w.Len() != 0 || w.bytes != 0 || len(w.byPeer) != 0 {
		t.Fatalf("after releasing everything: %d held, %d bytes, %v", w.Len(), w.bytes, w.byPeer)
	}
}

package trust

import (
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// AdmitGrace is how long what a peer sends before it is an admitted member here waits for
// the membership that admits it, before it is dropped as a stranger's: a member admitted a
// moment ago sends before the news reaches every member (and the member that admitted
// another sends to it before that one has taken in the answer to its join), and a request
// dropped then would cost its sender a whole round's timeout. A member restarted in a rolling
// update sends (its store refills, its entities load their state) before every member has
// taken in its new incarnation: 2 s failed 1-3 % of the asks of e2e TestRollingUpdate on a
// loaded machine, so 10 s (what waits stays bounded: MaxWaiting, MaxWaitingBytes).
const AdmitGrace = 10 * time.Second

// Bounds of a Waiting: a peer that is not a member can make it hold no more than this.
const (
	maxWaiting        = 1024    // items held at once
	maxWaitingPerPeer = 256     // items of one peer
	maxWaitingBytes   = 8 << 20 // their sizes together
)

// Waiting holds what peers that are not admitted members sent, in arrival order, for up to
// AdmitGrace: Release hands back what a peer sent once the membership admits it, Expire
// what waited too long (to be refused). It is bounded (maxWaiting, per peer and in bytes):
// what does not fit is refused at once. A pure structure: the time comes in, the order of
// what comes out depends only on what went in. Not safe for concurrent use.
type Waiting[T any] struct {
	held   []Held[T]
	bytes  int
	byPeer map[membership.NodeID]int
}

// Held is one item a peer sent while it was not admitted.
type Held[T any] struct {
	From membership.NodeID
	At   time.Time
	Item T
	size int
}

// Hold keeps item from peer from, which arrived at now and takes size bytes; false when it
// does not fit (then refuse it at once).
func (w *Waiting[T]) Hold(now time.Time, from membership.NodeID, item T, size int) bool {
	if len(w.held) >= maxWaiting || w.bytes+size > maxWaitingBytes || w.byPeer[from] >= maxWaitingPerPeer {
		return false
	}
	if w.byPeer == nil {
		w.byPeer = map[membership.NodeID]int{}
	}
	w.byPeer[from]++
	w.bytes += size
	w.held = append(w.held, Held[T]{From: from, At: now, Item: item, size: size})
	return true
}

// Len returns how many items are held.
func (w *Waiting[T]) Len() int { return len(w.held) }

// Holds reports whether something from peer from is held.
func (w *Waiting[T]) Holds(from membership.NodeID) bool { return len(w.held) > 0 && w.byPeer[from] > 0 }

// Held returns what is held, in arrival order, to look at (not to change).
func (w *Waiting[T]) Held() []Held[T] { return w.held }

// Release removes and returns, in arrival order, what the peers that admits admits now sent.
func (w *Waiting[T]) Release(admits func(membership.NodeID) bool) []Held[T] {
	return w.take(func(h *Held[T]) bool { return admits(h.From) })
}

// Expire removes and returns, in arrival order, what has waited AdmitGrace by now.
func (w *Waiting[T]) Expire(now time.Time) []Held[T] {
	if len(w.held) == 0 || now.Sub(w.held[0].At) < AdmitGrace {
		return nil // the oldest comes first
	}
	return w.take(func(h *Held[T]) bool { return now.Sub(h.At) >= AdmitGrace })
}

// Deadline returns when the oldest item held expires (the zero time: none held).
func (w *Waiting[T]) Deadline() time.Time {
	if len(w.held) == 0 {
		return time.Time{}
	}
	return w.held[0].At.Add(AdmitGrace)
}

// take removes and returns the items out says, keeping the others in order.
func (w *Waiting[T]) take(out func(*Held[T]) bool) []Held[T] {
	var taken []Held[T]
	kept := w.held[:0]
	for i := range w.held {
		h := w.held[i]
		if !out(&h) {
			kept = append(kept, h)
			continue
		}
		taken = append(taken, h)
		w.bytes -= h.size
		w.byPeer[h.From]--
		if w.byPeer[h.From] == 0 {
			delete(w.byPeer, h.From)
		}
	}
	clear(w.held[len(kept):])
	w.held = kept
	return taken
}

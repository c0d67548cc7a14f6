package node

import (
	"testing"

	"github.com/shardmesh/shardmesh/region"
)

// Messages come out of the queue in the order they went in, across the two buffers; a
// sender wakes the loop only when it finds the queue empty.
func TestDeliveriesInOrder(t *testing.T) {
	d := newDeliveries()
	in := func(id string) Deliver {
		return Deliver{Type: "t", Envelope: region.Envelope{Entity: "e" + "", Shard: "s" + "", Payload: id}}
	}
	woken := func() bool {
		select {
		case <-d.wake:
			return true
		default:
			return false
		}
	}
	d.push(in("1"))
	d.pushAll([]Deliver{in("2"), in("3")})
	if !woken() || woken() {
		t.Fatal("want exactly one wake-up for a queue that was empty")
	}
	q := d.take()
	d.push(in("4")) // into the other buffer, while the loop steps q
	if len(q) != 3 || q[0].Envelope.Payload != "1" || q[2].Envelope.Payload != "3" {
		t.Fatalf("first take %v", q)
	}
	d.giveBack(q)
	if q[0].Envelope.Payload != nil {
		t.Fatal("a buffer given back keeps its messages")
	}
	if !woken() {
		t.Fatal("no wake-up for a message queued after a take")
	}
	if q := d.take(); len(q) != 1 || q[0].Envelope.Payload != "4" {
		t.Fatalf("second take %v", q)
	}
	if q := d.take(); len(q) != 0 {
		t.Fatalf("an empty queue gave %v", q)
	}
}

// A large buffer that a burst left behind is let go once it has stayed mostly unused.
func TestDeliveriesLetGoOfABurst(t *testing.T) {
	d := newDeliveries()
	big := make([]Deliver, 1, 100_000)
	for range 16 {
		d.giveBack(big)
		if cap(d.spare) != 100_000 {
			t.Fatal("a large buffer was let go too soon")
		}
		d.spare = nil
	}
	d.giveBack(big)
	if d.spare != nil {
		t.Fatalf("a buffer of %d kept after 17 takes that used 1", cap(d.spare))
	}
	// An idle loop lets go of it too, after 17 ticks without a take.
	d.giveBack(big[:100_000])
	for range 16 {
		d.idle()
	}
	if cap(d.spare) != 100_000 {
		t.Fatal("a large buffer was let go by the first idle ticks")
	}
	d.idle()
	if d.spare != nil {
		t.Fatal("a large buffer kept after 17 idle ticks")
	}
}

package node

import (
	"errors"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
)

// A restarted member keeps its peer id, so its asks must not reuse the previous process's
// ids: a late reply to an old ask would answer a new one.
func TestAskIDsDifferPerProcess(t *testing.T) {
	a, b := newAsks(), newAsks()
	ia, ib := a.create().id, b.create().id
	if ia == ib || ia == 0 || ib == 0 {
		t.Fatalf("two processes' first ask ids: %d and %d", ia, ib)
	}
	// Ids go on from there, skipping 0 (a tell on the wire) when they wrap.
	a.next.Store(^uint64(0) - 1)
	if got := []uint64{a.create().id, a.create().id}; got[0] != ^uint64(0) || got[1] != 1 {
		t.Fatalf("ids around the wrap: %v", got)
	}
	// A reply to an id not tracked here (an ask of an earlier process) finds nothing.
	p := a.create()
	a.track(p, "m")
	if a.take(p.id+1) != nil || a.take(p.id) != Asker(p) {
		t.Fatal("take matched the wrong ask")
	}
}

// An ask that went to another member and was forwarded back here is answered here: the
// reply to this member is resolved, not sent over libp2p (which does not dial itself).
func TestReplyToSelfResolvesTheAsk(t *testing.T) {
	c := &Core{asks: newAsks()}
	c.self.Node = "me"
	ok, failed := c.asks.create(), c.asks.create()
	c.asks.track(ok, "me")
	c.asks.track(failed, "me")
	c.sendReply("me", ok.id, []byte("7"), nil)
	c.sendReply("me", failed.id, nil, ErrStopped)
	c.sendReply("me", 12345, []byte("late"), nil) // an ask that timed out: nothing
	select {
	case r := <-ok.result:
		if string(r.Encoded) != "7" || r.Err != nil {
			t.Errorf("reply %+v", r)
		}
	default:
		t.Fatal("the ask was not answered")
	}
	select {
	case r := <-failed.result:
		if !errors.Is(r.Err, ErrStopped) {
			t.Errorf("error reply %+v", r)
		}
	default:
		t.Fatal("the failed ask was not answered")
	}
}

// When a member is downed or removed, the asks waiting for its replies fail at once with
// ErrMemberDown (no reply will come); asks that went elsewhere wait on.
func TestAsksToADownedMemberFail(t *testing.T) {
	env := &recordingEnv{}
	c, _ := testCore(t, env)
	toX, toY := c.asks.create(), c.asks.create()
	c.asks.track(toX, "x")
	c.asks.track(toY, "y")
	c.react(membership.MemberChanged{Member: membership.Member{Node: "x", Status: membership.Down}, Previous: membership.Up})
	select {
	case r := <-toX.result:
		if !errors.Is(r.Err, ErrMemberDown) {
			t.Fatalf("the ask to the downed member: %+v", r)
		}
	default:
		t.Fatal("the ask to the downed member still waits")
	}
	select {
	case r := <-toY.result:
		t.Fatalf("the ask to another member was answered: %+v", r)
	default:
	}
	if c.asks.take(toY.id) == nil {
		t.Fatal("the ask to another member is no longer tracked")
	}
}

// A member that left gracefully (Exiting, then Removed) handed its shards off first, and
// routed on what reached it late: the asks that went to it wait for the new home's reply.
func TestAsksToAMemberThatLeftWait(t *testing.T) {
	env := &recordingEnv{}
	c, _ := testCore(t, env)
	toX := c.asks.create()
	c.asks.track(toX, "x")
	c.react(membership.MemberChanged{Member: membership.Member{Node: "x", Status: membership.Removed}, Previous: membership.Exiting})
	select {
	case r := <-toX.result:
		t.Fatalf("the ask to the member that left was answered: %+v", r)
	default:
	}
	if c.asks.take(toX.id) == nil {
		t.Fatal("the ask to the member that left is no longer tracked")
	}
}

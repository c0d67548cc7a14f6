package node

import (
	"errors"
	"testing"

	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/trust"
	"github.com/shardmesh/shardmesh/wire"
)

// A message a peer that is not an admitted member forwards takes the loop's fast path
// (Core.Deliver, as the region streams' batches do): it waits there for the peer to be
// admitted, is refused after trust.AdmitGrace with its credit returned, and never reaches
// an entity. The peer's ids fill nothing of the interned table, and its reply resolves
// nothing.
func TestForwardedByAStrangerWaitsThenIsRefused(t *testing.T) {
	env := &recordingEnv{}
	c, typ := testCore(t, env)
	const stranger = membership.NodeID("stranger")
	frame := wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("t"), Shard: []byte("7"), Entity: []byte("e"), Payload: []byte("x"), AskID: 9, ReplyTo: []byte("elsewhere")})
	in, ok, err := c.DecodeRegionFrame(stranger, frame)
	if err != nil || !ok || in.From != stranger {
		t.Fatalf("decoded %+v, %v, %v", in, ok, err)
	}
	if len(c.ids.m) != 0 {
		t.Fatalf("a stranger's ids were interned: %v", c.ids.m)
	}
	if !typ.credits.tryAcquire() {
		t.Fatal("no credit")
	}
	in.Envelope.Payload.(*Message).credits = typ.credits

	now := c.now
	c.Deliver(now, in)
	c.Flush()
	if n := len(c.Waiting()); n != 1 || len(env.refused) != 0 {
		t.Fatalf("%d inputs wait, %d refused; want the message waiting", n, len(env.refused))
	}
	c.Tick(now.Add(trust.AdmitGrace + 1))
	c.Flush()
	if len(c.Waiting()) != 0 || len(env.refused) != 1 || env.refused[0].from != stranger || env.refused[0].proto != RegionProtocol {
		t.Fatalf("after the grace: %d wait, refused %+v", len(c.Waiting()), env.refused)
	}
	if n := typ.credits.n.Load(); n != 0 {
		t.Fatalf("%d credits in use, want the refused message's returned", n)
	}
	if len(env.sent) != 0 {
		t.Fatalf("the stranger was answered: %+v", env.sent)
	}

	reply := wire.AppendReply(nil, &wire.Reply{AskID: 1, Payload: []byte("forged")})
	if _, _, err := c.DecodeRegionFrame(stranger, reply); !errors.Is(err, ErrNotAdmitted) {
		t.Fatalf("a stranger's reply: %v, want ErrNotAdmitted", err)
	}
}

package node

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
	"github.com/shardmesh/shardmesh/wire"
)

// recordingEnv is an Env that records the frames a Core sends and does nothing else.
type recordingEnv struct {
	sent    []sentFrames
	refused []refusal
}

type refusal struct {
	from  membership.NodeID
	proto protocol.ID
	in    Input
}

type sentFrames struct {
	to     membership.NodeID
	framed []byte
	n      int
	done   func(error)
}

func (e *recordingEnv) Send(to membership.NodeID, _ protocol.ID, frame []byte, done func(error)) {
	e.sent = append(e.sent, sentFrames{to: to, framed: binary.AppendUvarint(nil, uint64(len(frame))), n: 1, done: done})
	e.sent[len(e.sent)-1].framed = append(e.sent[len(e.sent)-1].framed, frame...)
}

func (e *recordingEnv) SendFrames(to membership.NodeID, _ protocol.ID, framed []byte, n int, done func(error)) {
	e.sent = append(e.sent, sentFrames{to: to, framed: append([]byte(nil), framed...), n: n, done: done})
}
func (e *recordingEnv) Store(uint64, StoreRequest)                         {}
func (e *recordingEnv) Lease(engine.LeaseOp)                               {}
func (e *recordingEnv) StartEntity(*EntityType, EntityContext) Incarnation { return nil }
func (e *recordingEnv) Publish(Event)                                      {}
func (e *recordingEnv) Gossip([]byte)                                      {}
func (e *recordingEnv) Connect(membership.Member, bool)                    {}
func (e *recordingEnv) Serving(time.Time)                                  {}
func (e *recordingEnv) KeepClusterSize(uint32)                             {}
func (e *recordingEnv) Stopped(membership.Stopped)                         {}
func (e *recordingEnv) ResolverLease(membership.LeaseOp)                   {}
func (e *recordingEnv) HostShard(remember.Unit, uint64, bool)              {}
func (e *recordingEnv) CareFor([]remember.Unit)                            {}
func (e *recordingEnv) Refused(from membership.NodeID, proto protocol.ID, in Input) {
	e.refused = append(e.refused, refusal{from: from, proto: proto, in: in})
}
func (e *recordingEnv) frames(t *testing.T, i int) (out []wire.Deliver) {
	t.Helper()
	rest := e.sent[i].framed
	for len(rest) > 0 {
		size, m := binary.Uvarint(rest)
		var d wire.Deliver
		if kind, err := wire.DecodeRegion(rest[m:m+int(size)], &d, &wire.Reply{}); err != nil || kind != wire.KindDeliver {
			t.Fatalf("batch %d: frame %d: %v", i, len(out), err)
		}
		out = append(out, d)
		rest = rest[m+int(size):]
	}
	if len(out) != e.sent[i].n {
		t.Fatalf("batch %d holds %d frames, announced %d", i, len(out), e.sent[i].n)
	}
	return out
}

// testCore returns a Core on env with entity type "t" registered (codecs: strings).
func testCore(t *testing.T, env Env) (*Core, *RegisteredType) {
	t.Helper()
	now := time.Now()
	c := NewCore(CoreConfig{Membership: membership.DefaultConfig()}, membership.Member{Node: "self", Incarnation: 1}, env, now)
	x, err := shard.NewHashCodeExtractor(10)
	if err != nil {
		t.Fatal(err)
	}
	str := func(v any) ([]byte, error) { return []byte(v.(string)), nil }
	unstr := func(b []byte) (any, error) { return string(b), nil }
	spec := EntityType{Name: "t", Extractor: x, New: func(*EntityContext) Behavior { return nil },
		EncodeMessage: str, DecodeMessage: unstr, EncodeReply: str, DecodeReply: unstr,
		Settings: engine.TypeConfig{Coordinator: coordinator.DefaultConfig("t"), Region: region.DefaultConfig("t")}}
	if err := c.registerType(now, spec); err != nil {
		t.Fatal(err)
	}
	return c, c.types["t"]
}

// The messages a Flush forwards leave in one batch per member, in the order forwarded; the
// batch's fate releases their credits and, when it was not written, tells their senders.
func TestForwardsLeaveInOneBatchPerMember(t *testing.T) {
	env := &recordingEnv{}
	c, typ := testCore(t, env)
	var asks []*pendingAsk
	forward := func(to membership.NodeID, entity, payload string, ask bool) {
		m := NewMessage(payload, nil)
		if ask {
			p := c.asks.create()
			asks = append(asks, p)
			m.ask = p
		}
		if !typ.credits.tryAcquire() {
			t.Fatal("no credit")
		}
		m.credits = typ.credits
		c.forward(engine.Forward{To: to, Type: "t", Envelope: region.Envelope{Shard: "3", Entity: shard.EntityID(entity), Payload: m, Hops: 1}})
	}
	forward("b", "e1", "one", false)
	forward("a", "e2", "two", true)
	forward("b", "e3", "three", true)
	forward("b", "e1", "four", false)
	c.sendForwards()
	if len(env.sent) != 2 || env.sent[0].to != "b" || env.sent[1].to != "a" {
		t.Fatalf("sent %d batches: %+v", len(env.sent), env.sent)
	}
	var got []string
	for _, d := range env.frames(t, 0) {
		got = append(got, string(d.Entity)+"="+string(d.Payload))
		if string(d.Type) != "t" || string(d.Shard) != "3" || d.Hops != 1 {
			t.Errorf("frame %+v", d)
		}
	}
	if want := "e1=one e3=three e1=four"; strings.Join(got, " ") != want {
		t.Fatalf("batch to b carries %s, want %s", strings.Join(got, " "), want)
	}
	if d := env.frames(t, 1); len(d) != 1 || d[0].AskID != asks[0].id || string(d[0].ReplyTo) != "self" {
		t.Fatalf("batch to a: %+v", d)
	}
	if n := typ.credits.n.Load(); n != 4 {
		t.Fatalf("%d credits held before the batches' fate is known, want 4", n)
	}
	env.sent[0].done(nil)
	env.sent[1].done(errors.New("stream reset"))
	if n := typ.credits.n.Load(); n != 0 {
		t.Fatalf("%d credits still held after the batches' fate", n)
	}
	select {
	case r := <-asks[0].result:
		if !errors.Is(r.Err, errSendFailed) {
			t.Fatalf("the ask of the batch not written: %+v", r)
		}
	default:
		t.Fatal("the ask of the batch not written was not answered")
	}
	select {
	case r := <-asks[1].result:
		t.Fatalf("the ask of the written batch was answered: %+v", r)
	default:
	}

	// The next Flush starts new batches, reusing the buffers.
	forward("a", "e2", "five", false)
	c.sendForwards()
	if len(env.sent) != 3 || env.sent[2].to != "a" || len(env.frames(t, 2)) != 1 {
		t.Fatalf("the next Flush sent %+v", env.sent[2:])
	}
}

// A frame decoded from another member's region finds the type and the shard and member ids
// already known here without allocating them again.
func TestDecodeRegionFrameInternsIDs(t *testing.T) {
	c, _ := testCore(t, &recordingEnv{})
	frame := wire.AppendDeliver(nil, &wire.Deliver{Type: []byte("t"), Shard: []byte("7"), Entity: []byte("e"), Payload: []byte("x"), AskID: 9, ReplyTo: []byte("peer")})
	from := c.self.Node // admitted: the only member of this core's membership
	first, ok, err := c.DecodeRegionFrame(from, frame)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if first.Type != "t" || first.Envelope.Shard != "7" || first.Envelope.Entity != "e" || first.Envelope.Payload.(*Message).replyTo != "peer" {
		t.Fatalf("decoded %+v", first)
	}
	// Message, payload and entity id: three allocations, nothing for the ids seen before.
	if n := testing.AllocsPerRun(100, func() { _, _, _ = c.DecodeRegionFrame(from, frame) }); n > 3 {
		t.Fatalf("%v allocations per frame, want at most 3", n)
	}
}

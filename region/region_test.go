package region

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/membership"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func up(ids ...membership.NodeID) []membership.Member {
	var out []membership.Member
	for i, id := range ids {
		out = append(out, membership.Member{Node: id, Incarnation: 1, Status: membership.Up, UpNumber: uint64(i + 1)})
	}
	return out
}

// newRegion returns region "b" following coordinator "a", registered.
func newRegion(t *testing.T, cfg Config) *Region {
	t.Helper()
	cfg.TypeName = "counter"
	r := New(cfg, "b", 1, t0)
	r.Update(t0, Members{Members: up("a", "b", "c"), Serving: true, Coordinator: "a"})
	r.Step(t0, "a", coordinator.RegisterAck{Term: 1})
	r.Ready()
	return r
}

func render(out []Output) string {
	var lines []string
	for _, o := range out {
		switch o := o.(type) {
		case ToCoordinator:
			lines = append(lines, fmt.Sprintf("to %s %T%+v", o.To, o.Msg, o.Msg))
		case Forward:
			lines = append(lines, fmt.Sprintf("forward to %s %s/%s hops=%d", o.To, o.Envelope.Shard, o.Envelope.Entity, o.Envelope.Hops))
		case DeliverLocal:
			lines = append(lines, fmt.Sprintf("deliver %s/%s", o.Envelope.Shard, o.Envelope.Entity))
		case Rejected:
			lines = append(lines, fmt.Sprintf("rejected %s/%s: %v", o.Envelope.Shard, o.Envelope.Entity, o.Err))
		default:
			lines = append(lines, fmt.Sprintf("%T%+v", o, o))
		}
	}
	return strings.Join(lines, "\n")
}

func env(shard, entity string) Envelope {
	return Envelope{Shard: shardID(shard), Entity: entityID(entity)}
}

func TestUnknownHomeIsBufferedAndRequestedOnce(t *testing.T) {
	r := newRegion(t, Config{})
	if d := r.Deliver(t0, env("1", "x")); d.Kind != Buffered {
		t.Fatalf("decision: %+v", d)
	}
	r.Deliver(t0, env("1", "y"))
	if got := render(r.Ready()); got != "to a coordinator.GetShardHome{Shard:1}" {
		t.Fatalf("got:\n%s", got)
	}
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	if got := render(r.Ready()); got != "forward to c 1/x hops=1\nforward to c 1/y hops=1" {
		t.Fatalf("buffer not flushed in order:\n%s", got)
	}
}

func TestLocalHomeStartsTheShard(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "2", Epoch: 7})
	if got := render(r.Ready()); got != "region.StartShard{Shard:2 Epoch:0.7}\nto a coordinator.ShardStarted{Shard:2 Epoch:0.7}" {
		t.Fatalf("got:\n%s", got)
	}
	if d := r.Deliver(t0, env("2", "x")); d.Kind != Local || d.Envelope.Entity != "x" {
		t.Fatalf("decision: %+v", d)
	}
}

func TestBufferFullRejects(t *testing.T) {
	r := newRegion(t, Config{BufferSize: 2})
	r.Deliver(t0, env("1", "a"))
	r.Deliver(t0, env("1", "b"))
	if d := r.Deliver(t0, env("1", "c")); d.Kind != Refused || !errors.Is(d.Err, ErrBufferFull) || d.Envelope.Entity != "c" {
		t.Fatalf("third message: %+v", d)
	}
	// What a stopping shard hands back is already held: it is kept beyond the bound, in front.
	r.Ready()
	r.Bounce(t0, []Envelope{env("1", "x")})
	if rd := r.Ready(); len(rd) != 0 {
		t.Fatalf("a bounced message was not kept: %s", render(rd))
	}
	if r.buffered != 3 || r.buffers["1"].envs[0].Entity != "x" {
		t.Fatalf("buffered %d, first %q", r.buffered, r.buffers["1"].envs[0].Entity)
	}
}

func TestHandoffBuffersUntilTheNewHome(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "1", Epoch: 5})
	if got := render(r.Ready()); got != "to a coordinator.BeginHandOffAck{Shard:1 Epoch:0.5}" {
		t.Fatalf("got:\n%s", got)
	}
	r.Deliver(t0, env("1", "x"))
	if got := render(r.Ready()); strings.Contains(got, "forward") {
		t.Fatalf("forwarded during a handoff:\n%s", got)
	}
	// A stale home (the epoch handed off) is refused; a newer one flushes.
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	if got := render(r.Ready()); strings.Contains(got, "forward") {
		t.Fatalf("accepted the handed-off epoch:\n%s", got)
	}
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "a", Epoch: 6})
	if got := render(r.Ready()); got != "forward to a 1/x hops=1" {
		t.Fatalf("got:\n%s", got)
	}
}

// TestHandOffOfARestampedEpochStopsTheShard: the owner hosts the shard under epoch 5; the
// coordinator re-stamped it to 6 but that HostShard is still on its way when HandOff{6}
// arrives. The owner must stop the shard, not answer "nothing of that epoch here".
func TestHandOffOfARestampedEpochStopsTheShard(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "4", Epoch: 5})
	r.Ready()
	r.Step(t0, "a", coordinator.HandOff{Shard: "4", Epoch: 6})
	if got := render(r.Ready()); got != "region.StopShard{Shard:4 Epoch:0.6}" {
		t.Fatalf("got:\n%s", got)
	}
	r.LocalShardStopped(t0, "4", 0)
	if got := render(r.Ready()); got != "to a coordinator.ShardStopped{Shard:4 Epoch:0.6 Entities:0}" {
		t.Fatalf("got:\n%s", got)
	}
	// A HandOff for an older epoch than the local one is stale: answered, nothing stopped.
	r.Step(t0, "a", coordinator.HostShard{Shard: "5", Epoch: 9})
	r.Ready()
	r.Step(t0, "a", coordinator.HandOff{Shard: "5", Epoch: 8})
	if got := render(r.Ready()); got != "to a coordinator.ShardStopped{Shard:5 Epoch:0.8 Entities:0}" {
		t.Fatalf("got:\n%s", got)
	}
	if stopping := r.LocalShards()["5"]; stopping {
		t.Fatal("a stale HandOff stopped the shard")
	}
}

func TestOnlyTheFollowedCoordinatorIsObeyed(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "c", coordinator.HostShard{Shard: "3", Epoch: 1})
	if got := render(r.Ready()); got != "" {
		t.Fatalf("obeyed a coordinator it does not follow:\n%s", got)
	}
	r.Step(t0, "c", coordinator.RequestRegister{})
	if got := render(r.Ready()); got != "to c coordinator.Register{Incarnation:1 Proxy:false Hosted:[] NoNewShards:false}" {
		t.Fatalf("a registration request must be answered by anyone:\n%s", got)
	}
}

func TestNotServingBuffersLocalDeliveries(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "2", Epoch: 7})
	r.Ready()
	r.Update(t0, Members{Members: up("a", "b", "c"), Serving: false, Coordinator: "a"})
	r.Deliver(t0, env("2", "x"))
	if got := render(r.Ready()); strings.Contains(got, "deliver") {
		t.Fatalf("delivered without the lease:\n%s", got)
	}
	r.Update(t0, Members{Members: up("a", "b", "c"), Serving: true, Coordinator: "a"})
	if got := render(r.Ready()); got != "deliver 2/x" {
		t.Fatalf("got:\n%s", got)
	}
}

func TestGracefulShutdownCompletesWhenEverythingIsHandedOff(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "2", Epoch: 7})
	r.Ready()
	r.GracefulShutdown(t0)
	if got := render(r.Ready()); got != "to a coordinator.GracefulShutdownReq{}" {
		t.Fatalf("got:\n%s", got)
	}
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "2", Epoch: 7})
	r.Step(t0, "a", coordinator.HandOff{Shard: "2", Epoch: 7})
	r.Ready()
	r.LocalShardStopped(t0, "2", 0)
	if got := render(r.Ready()); !strings.HasSuffix(got, "region.ShutdownComplete{}") {
		t.Fatalf("got:\n%s", got)
	}
}

// TestRegionDoneHandingOffStillRoutes: a message forwarded here by a sender with a stale
// home after this region handed off its last shard is routed to the shard's new home (asked
// of the coordinator), not refused: its member is still up until it exits.
func TestRegionDoneHandingOffStillRoutes(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "2", Epoch: 7})
	r.GracefulShutdown(t0)
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "2", Epoch: 7})
	r.Step(t0, "a", coordinator.HandOff{Shard: "2", Epoch: 7})
	r.LocalShardStopped(t0, "2", 0)
	if got := render(r.Ready()); !strings.HasSuffix(got, "region.ShutdownComplete{}") {
		t.Fatalf("got:\n%s", got)
	}
	if d := r.Deliver(t0, env("2", "x")); d.Kind != Buffered {
		t.Fatalf("decision after the shutdown completed: %+v", d)
	}
	if got := render(r.Ready()); got != "to a coordinator.GetShardHome{Shard:2}" {
		t.Fatalf("got:\n%s", got)
	}
	r.Step(t0, "a", coordinator.ShardHome{Shard: "2", Region: "c", Epoch: 8})
	if got := render(r.Ready()); got != "forward to c 2/x hops=1" {
		t.Fatalf("got:\n%s", got)
	}
	// Forwarded here as to the home: back to the sender, which routes it again.
	fwd := env("3", "y")
	fwd.Epoch = 5
	d := r.Deliver(t0, fwd)
	var nh *NotHomeError
	if d.Kind != Refused || !errors.As(d.Err, &nh) || nh.Shard != "3" || nh.Epoch != 5 {
		t.Fatalf("a forwarded message after the shutdown completed: %+v", d)
	}
}

// TestOnlyHostShardForThisIncarnationStartsAShard: a ShardHome naming this member (a stale
// answer, a gossip hint) does not start the shard, nor does a HostShard meant for a previous
// process of this member; the HostShard for this incarnation does.
func TestOnlyHostShardForThisIncarnationStartsAShard(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.ShardHome{Shard: "7", Region: "b", Epoch: coordinator.NewEpoch(1, 3)})
	r.Step(t0, "a", coordinator.HostShard{Shard: "7", Epoch: coordinator.NewEpoch(1, 4), Incarnation: 9})
	if out := render(r.Ready()); out != "" {
		t.Fatalf("started without a HostShard for this incarnation:\n%s", out)
	}
	if _, _, ok := r.Home("7"); ok {
		t.Fatal("a stale home naming this member was recorded")
	}
	r.Step(t0, "a", coordinator.HostShard{Shard: "7", Epoch: coordinator.NewEpoch(1, 5), Incarnation: 1})
	if out := render(r.Ready()); !strings.Contains(out, "StartShard{Shard:7 Epoch:1.5}") {
		t.Fatalf("the HostShard for this incarnation did not start the shard:\n%s", out)
	}
}

// TestNoNewShardsIsRegisteredUntilAcknowledged: SetNoNewShards registers again at once with
// the flag, and again after retry-interval until an acknowledgement comes; clearing it
// does the same.
func TestNoNewShardsIsRegisteredUntilAcknowledged(t *testing.T) {
	r := newRegion(t, Config{RetryInterval: time.Second})
	r.SetNoNewShards(t0, true)
	want := "to a coordinator.Register{Incarnation:1 Proxy:false Hosted:[] NoNewShards:true}"
	if got := render(r.Ready()); got != want {
		t.Fatalf("got:\n%s", got)
	}
	r.Tick(t0.Add(time.Second)) // lost: sent again
	if got := render(r.Ready()); got != want {
		t.Fatalf("no retry:\n%s", got)
	}
	r.Step(t0.Add(time.Second), "a", coordinator.RegisterAck{Term: 1})
	r.Tick(t0.Add(3 * time.Second))
	if got := render(r.Ready()); got != "" {
		t.Fatalf("sent again after the acknowledgement:\n%s", got)
	}
	r.SetNoNewShards(t0.Add(3*time.Second), false)
	if got := render(r.Ready()); got != "to a coordinator.Register{Incarnation:1 Proxy:false Hosted:[] NoNewShards:false}" {
		t.Fatalf("cleared:\n%s", got)
	}
}

// TestNotTheHomeRefusesAndTheSenderRoutesAgain: a message forwarded here as to the home of
// shard 3 with epoch 4, which this region knows has moved to c with epoch 6, is refused with
// the home it knows; the sender then drops its stale home (a as of 4), takes c's and
// forwards the message there with c's epoch. A refusal naming no newer home makes the sender
// ask the coordinator. A message sent on this member (epoch 0) is forwarded as before.
func TestNotTheHomeRefusesAndTheSenderRoutesAgain(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.ShardHome{Shard: "3", Region: "c", Epoch: 6})
	r.Ready()
	in := env("3", "x")
	in.Epoch, in.Hops = 4, 1
	d := r.Deliver(t0, in)
	var nh *NotHomeError
	if d.Kind != Refused || !errors.As(d.Err, &nh) || !errors.Is(d.Err, ErrNotHome) || nh.Home != "c" || nh.HomeEpoch != 6 || nh.Epoch != 4 {
		t.Fatalf("decision: %+v", d)
	}
	if d := r.Deliver(t0, env("3", "y")); d.Kind != Forwarded || d.To != "c" || d.Envelope.Epoch != 6 {
		t.Fatalf("a local sender's message: %+v", d)
	}

	// The sender's side: region s believes a hosts shard 3 with epoch 4.
	s := New(Config{TypeName: "counter"}, "s", 1, t0)
	s.Update(t0, Members{Members: up("a", "b", "c", "s"), Serving: true, Coordinator: "a"})
	s.Step(t0, "a", coordinator.RegisterAck{Term: 1})
	s.Step(t0, "a", coordinator.ShardHome{Shard: "3", Region: "b", Epoch: 4})
	s.Ready()
	s.NotHome(t0, "b", d.Envelope, nh)
	if got := render(s.Ready()); got != "forward to c 3/x hops=3" {
		t.Fatalf("after the refusal with a newer home:\n%s", got)
	}
	if h, e, _ := s.Home("3"); h != "c" || e != 6 {
		t.Fatalf("home after the refusal: %s %s", h, e)
	}
	// A refusal from a member that is not the home this region knows (b, the old home, or
	// a member that never was) routes the message again and changes nothing: here it goes
	// to c, with c's epoch, though the refusal names a newer home on a.
	s.NotHome(t0, "b", Envelope{Shard: "3", Entity: "w", Epoch: 6, Hops: 1}, &NotHomeError{Shard: "3", Epoch: 6, Home: "a", HomeEpoch: 99})
	if got := render(s.Ready()); got != "forward to c 3/w hops=3" {
		t.Fatalf("after a refusal from a member that is not the home:\n%s", got)
	}
	if h, e, _ := s.Home("3"); h != "c" || e != 6 {
		t.Fatalf("home after a refusal from a member that is not the home: %s %s", h, e)
	}
	// A refusal that names no newer home: the home is dropped and asked for.
	s.NotHome(t0, "c", Envelope{Shard: "3", Entity: "z", Epoch: 6, Hops: 1}, &NotHomeError{Shard: "3", Epoch: 6})
	if got := render(s.Ready()); got != "to a coordinator.GetShardHome{Shard:3}" {
		t.Fatalf("after a refusal naming no home:\n%s", got)
	}
	if _, _, ok := s.Home("3"); ok {
		t.Fatal("the stale home is still known")
	}
}

// TestMessagesHeldForARemovedHomeAskAtOnce: messages held while their home was unreachable
// ask for the next home the moment its member is gone, not at the next tick (a failover's
// senders wait for exactly this).
func TestMessagesHeldForARemovedHomeAskAtOnce(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	r.Update(t0, Members{Members: up("a", "b", "c"), Unreachable: map[membership.NodeID]bool{"c": true}, Serving: true, Coordinator: "a"})
	r.Ready()
	if d := r.Deliver(t0, env("1", "x")); d.Kind != Buffered {
		t.Fatalf("a message for an unreachable home: %+v", d)
	}
	if got := render(r.Ready()); got != "" {
		t.Fatalf("the home is known (unreachable): nothing to ask yet, got:\n%s", got)
	}
	at := t0.Add(time.Second)
	r.Update(at, Members{Members: up("a", "b"), Serving: true, Coordinator: "a"}) // c removed
	if got := render(r.Ready()); got != "to a coordinator.GetShardHome{Shard:1}" {
		t.Fatalf("c removed: got:\n%s", got)
	}
	r.Step(at, "a", coordinator.ShardHome{Shard: "1", Region: "a", Epoch: 6})
	if got := render(r.Ready()); got != "forward to a 1/x hops=1" {
		t.Fatalf("the next home: got:\n%s", got)
	}
}

// TestAHomeOnAGoneMemberIsAskedAgainAtTheNextTick: a coordinator that has not yet seen a
// member go may still name it; the region asks again at its next tick, not after
// retry-interval.
func TestAHomeOnAGoneMemberIsAskedAgainAtTheNextTick(t *testing.T) {
	r := newRegion(t, Config{RetryInterval: 2 * time.Second})
	r.Update(t0, Members{Members: up("a", "b"), Serving: true, Coordinator: "a"}) // c gone
	r.Ready()
	r.Deliver(t0, env("1", "x"))
	if got := render(r.Ready()); got != "to a coordinator.GetShardHome{Shard:1}" {
		t.Fatalf("got:\n%s", got)
	}
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	if got := render(r.Ready()); got != "" {
		t.Fatalf("a home on a gone member is no home, got:\n%s", got)
	}
	next := t0.Add(100 * time.Millisecond)
	r.Tick(next)
	if got := render(r.Ready()); got != "to a coordinator.GetShardHome{Shard:1}" {
		t.Fatalf("the next tick: got:\n%s", got)
	}
	r.Tick(next.Add(100 * time.Millisecond))
	if got := render(r.Ready()); got != "" {
		t.Fatalf("an answered request is asked again only after retry-interval, got:\n%s", got)
	}
}

// TestTheNamedNextHomeStartsOnTheOldHomesWord: named the next home of shard 1 while c hands
// it off, this region holds the shard's messages and starts it when c reports the stop,
// without waiting for the coordinator's HostShard. Words from anyone else, or about another
// allocation, start nothing.
func TestTheNamedNextHomeStartsOnTheOldHomesWord(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.ShardHome{Shard: "1", Region: "c", Epoch: 5})
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "1", Epoch: 5})
	r.Step(t0, "a", coordinator.HostShard{Shard: "1", Epoch: 6, Incarnation: 1, After: "c", AfterEpoch: 5})
	r.Ready()
	// A sender told the next home (ShardHome during the handoff) forwards here at once.
	if d := r.Deliver(t0, Envelope{Shard: "1", Entity: "x", Epoch: 6, Hops: 1}); d.Kind != Buffered {
		t.Fatalf("a message for the named shard before its start: %+v", d)
	}
	r.Ready()
	r.Step(t0, "a", coordinator.HandedOver{Shard: "1", Epoch: 5}) // not the old home
	r.Step(t0, "c", coordinator.HandedOver{Shard: "1", Epoch: 4}) // another allocation
	if got := render(r.Ready()); got != "" {
		t.Fatalf("started on another word:\n%s", got)
	}
	r.Step(t0, "c", coordinator.HandedOver{Shard: "1", Epoch: 5})
	if got := render(r.Ready()); got != "region.StartShard{Shard:1 Epoch:0.6}\ndeliver 1/x\nto a coordinator.ShardStarted{Shard:1 Epoch:0.6}" {
		t.Fatalf("the old home's word:\n%s", got)
	}
	// The coordinator's own HostShard, after the stop, finds it started.
	r.Step(t0, "a", coordinator.HostShard{Shard: "1", Epoch: 6, Incarnation: 1})
	if got := render(r.Ready()); got != "to a coordinator.ShardStarted{Shard:1 Epoch:0.6}" {
		t.Fatalf("HostShard after the start:\n%s", got)
	}
}

// TestAnOldHomesWordBeforeTheNamingIsKept: the old home's word may overtake the
// coordinator's naming (they come from different members); the shard starts when the naming
// comes.
func TestAnOldHomesWordBeforeTheNamingIsKept(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "1", Epoch: 5})
	r.Step(t0, "c", coordinator.HandedOver{Shard: "1", Epoch: 5})
	if got := render(r.Ready()); got != "to a coordinator.BeginHandOffAck{Shard:1 Epoch:0.5}" {
		t.Fatalf("a word without a naming starts nothing:\n%s", got)
	}
	r.Step(t0, "a", coordinator.HostShard{Shard: "1", Epoch: 6, Incarnation: 1, After: "c", AfterEpoch: 5})
	if got := render(r.Ready()); got != "region.StartShard{Shard:1 Epoch:0.6}\nto a coordinator.ShardStarted{Shard:1 Epoch:0.6}" {
		t.Fatalf("the naming after the word:\n%s", got)
	}
}

// TestTheOldHomeHandsOverToTheNextHome: told the next home with HandOff, the old home tells
// it when the shard stopped and sends it what it held meanwhile; a sender that still takes
// this member for the home is bounced with the next home named.
func TestTheOldHomeHandsOverToTheNextHome(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.HostShard{Shard: "1", Epoch: 5})
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "1", Epoch: 5})
	r.Step(t0, "a", coordinator.HandOff{Shard: "1", Epoch: 5, Next: "c", NextEpoch: 6})
	r.Ready()
	if d := r.Deliver(t0, Envelope{Shard: "1", Entity: "x", Epoch: 5, Hops: 1}); d.Kind != Buffered {
		t.Fatalf("during the stop: %+v", d)
	}
	// A message of this member's own stamped with the shard's epoch (a reminder's firing)
	// must not leave the member: it is refused, not handed over.
	r.Deliver(t0, Envelope{Shard: "1", Entity: "f", Epoch: 5})
	r.Ready()
	r.LocalShardStopped(t0, "1", 3)
	want := "to a coordinator.ShardStopped{Shard:1 Epoch:0.5 Entities:3}\nto c coordinator.HandedOver{Shard:1 Epoch:0.5}\nforward to c 1/x hops=2\n" +
		"rejected 1/f: not the home of shard 1 with epoch 0.5: c is, with epoch 0.6"
	if got := render(r.Ready()); got != want {
		t.Fatalf("stopped:\n%s\nwant\n%s", got, want)
	}
	d := r.Deliver(t0, Envelope{Shard: "1", Entity: "y", Epoch: 5, Hops: 1})
	var nh *NotHomeError
	if d.Kind != Refused || !errors.As(d.Err, &nh) || nh.Home != "c" || nh.HomeEpoch != 6 {
		t.Fatalf("a late message for the old home: %+v", d)
	}
}

// TestANewCoordinatorVoidsTheNaming: a naming holds only under the coordinator that made
// it; under a new one the old home's word starts nothing.
func TestANewCoordinatorVoidsTheNaming(t *testing.T) {
	r := newRegion(t, Config{})
	r.Step(t0, "a", coordinator.BeginHandOff{Shard: "1", Epoch: 5})
	r.Step(t0, "a", coordinator.HostShard{Shard: "1", Epoch: 6, Incarnation: 1, After: "c", AfterEpoch: 5})
	r.Update(t0, Members{Members: up("b", "c"), Serving: true, Coordinator: "b"}) // a gone: b coordinates
	r.Ready()
	r.Step(t0, "c", coordinator.HandedOver{Shard: "1", Epoch: 5})
	if got := render(r.Ready()); strings.Contains(got, "StartShard") {
		t.Fatalf("started on a naming of the previous coordinator:\n%s", got)
	}
}

package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func members(ids ...membership.NodeID) []membership.Member {
	var out []membership.Member
	for i, id := range ids {
		out = append(out, membership.Member{Node: id, Incarnation: 1, Status: membership.Up, UpNumber: uint64(i + 1)})
	}
	return out
}

func newCoordinator(t *testing.T, ids ...membership.NodeID) *Coordinator {
	t.Helper()
	cfg := DefaultConfig("counter")
	s, err := allocation.NewLeastShard(allocation.LeastShardConfig{RebalanceAbsoluteLimit: 100, RebalanceRelativeLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Strategy = s
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := New(cfg, ids[0], 1, t0)
	c.Update(t0, Members{Members: members(ids...), Serving: true})
	return c
}

// sent renders the messages of a Ready, one per line, for exact comparisons.
func sent(rd Ready) string {
	var lines []string
	for _, env := range rd.Messages {
		lines = append(lines, fmt.Sprintf("%s %T%+v", env.To, env.Msg, env.Msg))
	}
	return strings.Join(lines, "\n")
}

func TestRecoveryWaitsForEveryMember(t *testing.T) {
	c := newCoordinator(t, "a", "b", "c")
	if c.Recovered() {
		t.Fatal("recovered before any region registered")
	}
	out := sent(c.Ready())
	for _, id := range []string{"a", "b", "c"} {
		if !strings.Contains(out, id+" coordinator.RequestRegister") {
			t.Errorf("no RequestRegister to %s:\n%s", id, out)
		}
	}
	c.Step(t0, "a", Register{Incarnation: 1})
	c.Step(t0, "b", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "7", Epoch: NewEpoch(1, 3)}}})
	// c is reachable but silent: no timeout may decide for it.
	c.Tick(t0.Add(time.Minute))
	if c.Recovered() {
		t.Fatal("recovered without hearing from c")
	}
	c.Step(t0.Add(time.Minute), "c", NoRegion{Incarnation: 1})
	if !c.Recovered() {
		t.Fatal("not recovered after every member answered")
	}
	if r, e, ok := c.Allocation("7"); !ok || r != "b" || e != NewEpoch(1, 3) {
		t.Errorf("adopted allocation: %s %s %v", r, e, ok)
	}
}

func TestRecoveryWaitsForDownMembersUntilRemoved(t *testing.T) {
	c := newCoordinator(t, "a", "b")
	c.Step(t0, "a", Register{Incarnation: 1})
	ms := members("a", "b")
	ms[1].Status = membership.Down
	c.Update(t0, Members{Members: ms, Serving: true})
	c.Tick(t0.Add(time.Hour))
	if c.Recovered() {
		t.Fatal("recovered while a Down member (which may still host shards) is not removed")
	}
	ms[1].Status = membership.Removed
	c.Update(t0.Add(time.Hour), Members{Members: ms, Serving: true})
	if !c.Recovered() {
		t.Fatal("not recovered once the Down member was removed")
	}
}

func recovered(t *testing.T, ids ...membership.NodeID) *Coordinator {
	t.Helper()
	c := newCoordinator(t, ids...)
	for _, id := range ids {
		c.Step(t0, id, Register{Incarnation: 1})
	}
	if !c.Recovered() {
		t.Fatal("not recovered")
	}
	c.Ready()
	return c
}

func TestAllocationAnswersEveryRequester(t *testing.T) {
	c := recovered(t, "a", "b")
	c.Step(t0, "b", GetShardHome{Shard: "1"})
	rd := c.Ready()
	home, epoch, ok := c.Allocation("1")
	if !ok {
		t.Fatal("not allocated")
	}
	want := fmt.Sprintf("%s coordinator.HostShard{Shard:1 Epoch:%v Incarnation:1 After: AfterEpoch:0.0}\nb coordinator.ShardHome{Shard:1 Region:%s Epoch:%v}", home, epoch, home, epoch)
	if got := sent(rd); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if epoch.Term() != 1 {
		t.Errorf("epoch %s not of term 1", epoch)
	}
}

func TestHandoffProtocol(t *testing.T) {
	c := recovered(t, "a", "b")
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	c.Ready()
	from, epoch, _ := c.Allocation("1")
	c.Step(t0, from, ShardStarted{Shard: "1", Epoch: epoch})
	c.Step(t0, from, GracefulShutdownReq{})
	rd := sent(c.Ready())
	if !strings.Contains(rd, fmt.Sprintf("a coordinator.BeginHandOff{Shard:1 Epoch:%v}", epoch)) ||
		!strings.Contains(rd, fmt.Sprintf("b coordinator.BeginHandOff{Shard:1 Epoch:%v}", epoch)) {
		t.Fatalf("BeginHandOff not sent to every region:\n%s", rd)
	}
	// Nothing is answered for a shard in handoff.
	c.Step(t0, "b", GetShardHome{Shard: "1"})
	if out := sent(c.Ready()); out != "" {
		t.Fatalf("answered during a handoff: %s", out)
	}
	c.Step(t0, "a", BeginHandOffAck{Shard: "1", Epoch: epoch})
	if out := sent(c.Ready()); out != "" {
		t.Fatalf("HandOff before every region acknowledged: %s", out)
	}
	c.Step(t0, "b", BeginHandOffAck{Shard: "1", Epoch: epoch})
	// Every region buffers: the old home is told to stop, and the next home is named to it,
	// to the next home itself (which takes the shard when the old home says it stopped) and
	// to the regions that asked (which send it what they held).
	next := NewEpoch(epoch.Term(), epoch.Seq()+1)
	want := fmt.Sprintf("b coordinator.HostShard{Shard:1 Epoch:%v Incarnation:1 After:%s AfterEpoch:%v}\n"+
		"b coordinator.ShardHome{Shard:1 Region:b Epoch:%v}\n"+
		"%s coordinator.HandOff{Shard:1 Epoch:%v Next:b NextEpoch:%v}", next, from, epoch, next, from, epoch, next)
	if out := sent(c.Ready()); out != want {
		t.Fatalf("after all acks:\n%s\nwant\n%s", out, want)
	}
	// Asked now, the next home is the answer.
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	if out := sent(c.Ready()); out != fmt.Sprintf("a coordinator.ShardHome{Shard:1 Region:b Epoch:%v}", next) {
		t.Fatalf("asked after the naming: %s", out)
	}
	// A stale ShardStopped (older epoch) changes nothing.
	c.Step(t0, from, ShardStopped{Shard: "1", Epoch: epoch - 1})
	if _, e, _ := c.Allocation("1"); e != epoch {
		t.Fatal("a stale ShardStopped deallocated the shard")
	}
	c.Step(t0, from, ShardStopped{Shard: "1", Epoch: epoch})
	to, newEpoch, ok := c.Allocation("1")
	if !ok || to != "b" || newEpoch != next {
		t.Fatalf("after the handoff: %s %s %v (was %s %s, named b %s)", to, newEpoch, ok, from, epoch, next)
	}
	if out := sent(c.Ready()); !strings.Contains(out, fmt.Sprintf("b coordinator.HostShard{Shard:1 Epoch:%v Incarnation:1 After: AfterEpoch:0.0}", next)) {
		t.Fatalf("the next home was not told to host the shard:\n%s", out)
	}
}

// TestFailedHandoffRestamps: a handoff that times out leaves the shard where it was but under
// a new epoch, because regions that acknowledged BeginHandOff refuse the old one.
func TestFailedHandoffRestamps(t *testing.T) {
	c := recovered(t, "a", "b")
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	c.Ready()
	owner, epoch, _ := c.Allocation("1")
	c.Step(t0, owner, ShardStarted{Shard: "1", Epoch: epoch})
	c.Step(t0, owner, GracefulShutdownReq{})
	c.Ready()
	c.Tick(t0.Add(2 * time.Minute))
	rd := c.Ready()
	same, newEpoch, _ := c.Allocation("1")
	if same != owner || newEpoch <= epoch {
		t.Fatalf("after the timeout: %s %s (was %s %s)", same, newEpoch, owner, epoch)
	}
	if !strings.Contains(sent(rd), fmt.Sprintf("%s coordinator.HostShard{Shard:1 Epoch:%v Incarnation:1 After: AfterEpoch:0.0}", owner, newEpoch)) {
		t.Fatalf("the owner was not told the new epoch:\n%s", sent(rd))
	}
	if !slices.ContainsFunc(rd.Events, func(e Event) bool { _, ok := e.(HandoffFailed); return ok }) {
		t.Error("no HandoffFailed event")
	}
}

// TestAdoptedAllocationIsRestampedBeforeItIsServed: a new coordinator never serves an
// earlier term's epoch.
func TestAdoptedAllocationIsRestampedBeforeItIsServed(t *testing.T) {
	cfg := DefaultConfig("counter")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := New(cfg, "b", 2, t0)
	ms := members("a", "b")
	ms[0].Status = membership.Removed
	c.Update(t0, Members{Members: ms, Serving: true})
	old := NewEpoch(1, 14)
	c.Step(t0, "b", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "4", Epoch: old}}})
	c.Ready()
	c.Step(t0, "b", GetShardHome{Shard: "4"})
	out := sent(c.Ready())
	_, e, _ := c.Allocation("4")
	if e.Term() != 2 || !strings.Contains(out, fmt.Sprintf("b coordinator.HostShard{Shard:4 Epoch:%v Incarnation:1 After: AfterEpoch:0.0}", e)) ||
		!strings.Contains(out, fmt.Sprintf("b coordinator.ShardHome{Shard:4 Region:b Epoch:%v}", e)) {
		t.Fatalf("epoch %s served as:\n%s", e, out)
	}
}

func TestRegionOfRemovedMemberIsTerminated(t *testing.T) {
	c := recovered(t, "a", "b")
	c.Step(t0, "a", GetShardHome{Shard: shard.ID("9")})
	c.Ready()
	owner, _, _ := c.Allocation("9")
	ms := members("a", "b")
	for i := range ms {
		if ms[i].Node == owner {
			ms[i].Status = membership.Removed
		}
	}
	c.Update(t0, Members{Members: ms, Serving: true})
	if _, _, ok := c.Allocation("9"); ok {
		t.Fatal("a removed member's shard stays allocated")
	}
}

func TestNothingIsAnsweredWhileNotServing(t *testing.T) {
	c := recovered(t, "a", "b")
	c.Update(t0, Members{Members: members("a", "b"), Serving: false})
	c.Step(t0, "b", GetShardHome{Shard: "1"})
	if out := sent(c.Ready()); out != "" {
		t.Fatalf("a coordinator without its lease answered: %s", out)
	}
	c.Update(t0, Members{Members: members("a", "b"), Serving: true})
	if out := sent(c.Ready()); !strings.Contains(out, "ShardHome") {
		t.Fatalf("the held request was not answered once serving: %s", out)
	}
}

// TestRememberedShardsAreAllocatedWithoutMessages: with remember-entities, the coordinator
// loads the stored shards once it has recovered and allocates those without a home; the
// shards of a region that terminates are allocated again at once.
func TestRememberedShardsAreAllocatedWithoutMessages(t *testing.T) {
	c := newCoordinator(t, "a", "b")
	c.cfg.RememberEntities = true
	c.Ready()
	c.Step(t0, "a", Register{Incarnation: 1})
	c.Step(t0, "b", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "1", Epoch: NewEpoch(1, 0)}}})
	rd := c.Ready()
	if !rd.LoadShards {
		t.Fatal("no LoadShards after recovery")
	}
	c.ShardsLoaded(t0, nil, fmt.Errorf("no quorum"))
	c.Tick(t0.Add(time.Second))
	if c.Ready().LoadShards {
		t.Fatal("asked again before waiting-for-state-timeout")
	}
	c.Tick(t0.Add(2 * time.Second))
	if !c.Ready().LoadShards {
		t.Fatal("not asked again after a failure")
	}
	c.ShardsLoaded(t0.Add(2*time.Second), []shard.ID{"1", "2", "3"}, nil)
	for _, s := range []shard.ID{"1", "2", "3"} {
		if _, _, ok := c.Allocation(s); !ok {
			t.Errorf("remembered shard %s not allocated", s)
		}
	}
	if r, _, _ := c.Allocation("1"); r != "b" {
		t.Errorf("shard 1 moved from its home to %s", r)
	}
	c.Tick(t0.Add(time.Minute))
	if c.Ready().LoadShards {
		t.Fatal("loaded twice")
	}
	// b goes away: its shards are allocated again without waiting for a message.
	c.Update(t0.Add(time.Minute), Members{Members: members("a"), Serving: true})
	for s, r := range c.Allocations() {
		if r != "a" {
			t.Errorf("shard %s still on %s", s, r)
		}
	}
	if len(c.Allocations()) != 3 {
		t.Errorf("allocations after b left: %v", c.Allocations())
	}
}

// TestMinMembersDefersOnlyTheFirstAllocations: min-nr-of-members holds allocation back until
// that many regions registered; a cluster that later shrinks below it keeps allocating.
func TestMinMembersDefersOnlyTheFirstAllocations(t *testing.T) {
	c := newCoordinator(t, "a", "b")
	c.cfg.MinMembers = 2
	c.Step(t0, "a", Register{Incarnation: 1})
	c.Update(t0, Members{Members: members("a", "b")[:1], Serving: true}) // b is not a member yet
	c.Step(t0, "a", GetShardHome{Shard: "1"})
	if _, _, ok := c.Allocation("1"); ok {
		t.Fatal("allocated with one region of two")
	}
	c.Update(t0, Members{Members: members("a", "b"), Serving: true})
	c.Step(t0, "b", Register{Incarnation: 1})
	if _, _, ok := c.Allocation("1"); !ok {
		t.Fatal("not allocated once two regions registered")
	}
	c.Update(t0, Members{Members: members("a"), Serving: true}) // b goes away
	c.Step(t0, "a", GetShardHome{Shard: "2"})
	if _, _, ok := c.Allocation("2"); !ok {
		t.Fatal("a cluster that shrank below min-nr-of-members stopped allocating")
	}
}

// A home on a Down member is not given: the request waits for the member's removal and is
// answered then with the shard's new home (a requester told the Down one would refuse it
// and ask again only after retry-interval).
func TestHomeOnADownMemberWaitsForItsRemoval(t *testing.T) {
	c := recovered(t, "a", "b", "c")
	c.Step(t0, "a", GetShardHome{Shard: shard.ID("9")})
	c.Ready()
	owner, _, _ := c.Allocation("9")
	asker := membership.NodeID("a")
	if owner == asker {
		asker = "b"
	}
	ms := members("a", "b", "c")
	setStatus := func(st membership.Status) {
		for i := range ms {
			if ms[i].Node == owner {
				ms[i].Status = st
			}
		}
		c.Update(t0, Members{Members: ms, Serving: true})
	}
	setStatus(membership.Down)
	c.Ready()
	c.Step(t0, asker, GetShardHome{Shard: shard.ID("9")})
	if got := sent(c.Ready()); got != "" {
		t.Fatalf("answered with a home on a Down member:\n%s", got)
	}
	setStatus(membership.Removed)
	home, epoch, ok := c.Allocation("9")
	if !ok || home == owner {
		t.Fatalf("after the removal: allocated %v to %s", ok, home)
	}
	if got, want := sent(c.Ready()), fmt.Sprintf("%s coordinator.ShardHome{Shard:9 Region:%s Epoch:%v}", asker, home, epoch); !strings.Contains(got, want) {
		t.Fatalf("got\n%s\nwant a line\n%s", got, want)
	}
}

// namedHandoff allocates shard 1 to a (of regions a, b, c), hands it off for a graceful
// shutdown of a, and returns once every region acknowledged: b or c is named its next home.
func namedHandoff(t *testing.T) (c *Coordinator, epoch Epoch, next membership.NodeID, nextEpoch Epoch) {
	t.Helper()
	c = recovered(t, "a", "b", "c")
	c.Step(t0, "a", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "1", Epoch: NewEpoch(1, 0)}}})
	_, epoch, _ = c.Allocation("1")
	c.Step(t0, "a", GracefulShutdownReq{})
	for _, id := range []membership.NodeID{"a", "b", "c"} {
		c.Step(t0, id, BeginHandOffAck{Shard: "1", Epoch: epoch})
	}
	c.Ready()
	hs := c.Handoffs()
	if len(hs) != 1 || hs[0].Next == "" || hs[0].Next == "a" {
		t.Fatalf("handoffs after every acknowledgement: %+v", hs)
	}
	return c, epoch, hs[0].Next, NewEpoch(epoch.Term(), epoch.Seq()+1)
}

// TestNamedNextHomeTakesTheShardWhateverTheOldHome: once named, the next home gets the shard
// under the named epoch when the old home stops it, and also when the old home's region
// terminates first (it may have handed the shard over before it went).
func TestNamedNextHomeTakesTheShardWhateverTheOldHome(t *testing.T) {
	c, epoch, next, nextEpoch := namedHandoff(t)
	c.Step(t0, "a", ShardStopped{Shard: "1", Epoch: epoch})
	if r, e, _ := c.Allocation("1"); r != next || e != nextEpoch {
		t.Fatalf("after the stop: %s %s, named %s %s", r, e, next, nextEpoch)
	}

	c, _, next, nextEpoch = namedHandoff(t)
	c.Update(t0, Members{Members: members("b", "c"), Serving: true}) // a removed before it reported
	if r, e, _ := c.Allocation("1"); r != next || e != nextEpoch {
		t.Fatalf("after the old home's removal: %s %s, named %s %s", r, e, next, nextEpoch)
	}
	if hs := c.Handoffs(); len(hs) != 0 {
		t.Fatalf("handoffs left: %+v", hs)
	}
}

// TestANamedNextHomeThatGoesIsForgotten: when the named next home goes before the stop, the
// shard is allocated after the stop as without a naming, never to the region that went.
func TestANamedNextHomeThatGoesIsForgotten(t *testing.T) {
	c, epoch, next, nextEpoch := namedHandoff(t)
	rest := slices.DeleteFunc([]membership.NodeID{"a", "b", "c"}, func(id membership.NodeID) bool { return id == next })
	c.Update(t0, Members{Members: members(rest...), Serving: true})
	c.Step(t0, "a", ShardStopped{Shard: "1", Epoch: epoch})
	r, e, ok := c.Allocation("1")
	if !ok || r == next || e == nextEpoch {
		t.Fatalf("after the stop: %s %s %v; the named home %s (%s) went", r, e, ok, next, nextEpoch)
	}
}

// TestANamedHandoffIsNotFailedBack: a handoff that named a next home is not given up after
// handoff-timeout (the next home may already run the shard on the old home's word): the
// old home is told again, the next home named again, and the shard stays unallocated until
// the stop.
func TestANamedHandoffIsNotFailedBack(t *testing.T) {
	c, epoch, next, nextEpoch := namedHandoff(t)
	c.Tick(t0.Add(2 * time.Minute))
	rd := c.Ready()
	want := fmt.Sprintf("a coordinator.HandOff{Shard:1 Epoch:%v Next:%s NextEpoch:%v}\n"+
		"%s coordinator.HostShard{Shard:1 Epoch:%v Incarnation:1 After:a AfterEpoch:%v}", epoch, next, nextEpoch, next, nextEpoch, epoch)
	if got := sent(rd); got != want {
		t.Fatalf("after handoff-timeout:\n%s\nwant\n%s", got, want)
	}
	if slices.ContainsFunc(rd.Events, func(e Event) bool { _, ok := e.(HandoffFailed); return ok }) {
		t.Fatal("a named handoff failed back to the old home")
	}
	if r, e, _ := c.Allocation("1"); r != "a" || e != epoch {
		t.Fatalf("restamped: %s %s", r, e)
	}
	c.Tick(t0.Add(2*time.Minute + time.Second))
	if got := sent(c.Ready()); got != "" {
		t.Fatalf("told again before another handoff-timeout: %s", got)
	}
}

// TestNamingsSpreadAsAllocationsWould: the next homes named in one round count where they
// go, so two shards leaving a region spread over the two others (as two allocations after
// their stops would).
func TestNamingsSpreadAsAllocationsWould(t *testing.T) {
	c := recovered(t, "a", "b", "c")
	c.Step(t0, "a", Register{Incarnation: 1, Hosted: []Hosted{{Shard: "1", Epoch: NewEpoch(1, 0)}, {Shard: "2", Epoch: NewEpoch(1, 1)}}})
	c.Step(t0, "a", GracefulShutdownReq{})
	for _, s := range []shard.ID{"1", "2"} {
		_, e, _ := c.Allocation(s)
		for _, id := range []membership.NodeID{"a", "b", "c"} {
			c.Step(t0, id, BeginHandOffAck{Shard: s, Epoch: e})
		}
	}
	hs := c.Handoffs()
	if len(hs) != 2 || hs[0].Next == "" || hs[0].Next == hs[1].Next {
		t.Fatalf("named: %+v", hs)
	}
}

package adminserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

var (
	membersCall  = &adminpb.Request{Call: &adminpb.Request_Members{Members: &adminpb.MembersRequest{}}}
	askCall      = &adminpb.Request{Call: &adminpb.Request_Ask{Ask: &adminpb.AskRequest{EntityType: "counter", Entity: "a", Payload: []byte("get")}}}
	leaveCall    = &adminpb.Request{Call: &adminpb.Request_Shutdown{Shutdown: &adminpb.ShutdownRequest{}}}
	shutdownCall = &adminpb.Request{Call: &adminpb.Request_Shutdown{Shutdown: &adminpb.ShutdownRequest{Follow: true}}}
)

func downCall(node string, force, check bool) *adminpb.Request {
	return &adminpb.Request{Call: &adminpb.Request_Down{Down: &adminpb.DownRequest{Node: node, Force: force, Check: check}}}
}

// TestAuthorisation: calls that change the cluster only for admins, refused with the
// reason and logged with the caller's peer id; reading and messages for admins and
// members always, for anyone only with read-only-open.
func TestAuthorisation(t *testing.T) {
	self, other, adminID, stranger := newID(t), newID(t), newID(t), newID(t)
	for _, open := range []bool{true, false} {
		b := newFakeBackend(self.String(), other.String())
		s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}, ReadOnlyOpen: open})
		cases := []struct {
			name   string
			caller peer.ID
			req    *adminpb.Request
			want   adminpb.Code
		}{
			{"admin reads", adminID, membersCall, adminpb.Code_OK},
			{"member reads", other, membersCall, adminpb.Code_OK},
			{"stranger reads", stranger, membersCall, map[bool]adminpb.Code{true: adminpb.Code_OK, false: adminpb.Code_REFUSED}[open]},
			{"stranger asks", stranger, askCall, map[bool]adminpb.Code{true: adminpb.Code_OK, false: adminpb.Code_REFUSED}[open]},
			{"member asks", other, askCall, adminpb.Code_OK},
			{"stranger leaves", stranger, leaveCall, adminpb.Code_REFUSED},
			{"member shuts down", other, shutdownCall, adminpb.Code_REFUSED},
			{"stranger downs", stranger, downCall(other.String(), true, false), adminpb.Code_REFUSED},
			{"admin leaves", adminID, leaveCall, adminpb.Code_OK},
		}
		for _, c := range cases {
			out := s.call(t, c.caller, c.req)
			if len(out) == 0 || out[len(out)-1].Code != c.want {
				t.Errorf("open=%v %s: %v, want %v", open, c.name, out, c.want)
			}
			if c.want == adminpb.Code_REFUSED {
				if !strings.Contains(s.logs.String(), c.caller.String()) {
					t.Errorf("open=%v %s: refusal not logged with the caller's peer id:\n%s", open, c.name, s.logs.String())
				}
				if !strings.HasPrefix(out[0].Error, "refused: ") {
					t.Errorf("open=%v %s: refusal without its reason: %q", open, c.name, out[0].Error)
				}
			}
		}
		if len(b.downed) != 0 {
			t.Errorf("a refused down changed something: %v", b.downed)
		}
		if b.shutdowns != 1 {
			t.Errorf("%d shutdowns began, want 1 (the admin's leave)", b.shutdowns)
		}
	}
}

func TestRefusalWithoutAnyAdminSaysHowToAllowOne(t *testing.T) {
	self := newID(t)
	s := newTestServer(t, newFakeBackend(self.String()), Config{ReadOnlyOpen: true})
	resp := s.one(t, newID(t), leaveCall)
	if resp.Code != adminpb.Code_REFUSED || !strings.Contains(resp.Error, "--admin-allow") {
		t.Fatalf("%v", resp)
	}
}

// TestDown: a reachable member of the majority only with force; an unreachable one at
// once; nothing from a member that is not on the majority side; check changes nothing.
func TestDown(t *testing.T) {
	self, b1, b2, adminID := newID(t), newID(t), newID(t), newID(t)
	setup := func(unreachable ...peer.ID) *testServer {
		b := newFakeBackend(self.String(), b1.String(), b2.String())
		for _, u := range unreachable {
			b.member(u.String()).Reachable = false
		}
		return newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
	}
	s := setup()
	if r := s.one(t, adminID, downCall(b1.String(), false, false)); r.Code != adminpb.Code_REFUSED || !strings.Contains(r.Error, "reachable") {
		t.Errorf("reachable majority member: %v", r)
	}
	if r := s.one(t, adminID, downCall(b1.String(), true, true)); r.Code != adminpb.Code_OK || r.GetDown().Downed {
		t.Errorf("check with force: %v", r)
	}
	if len(s.backend.downed) != 0 {
		t.Fatalf("refusal or check downed %v", s.backend.downed)
	}
	if r := s.one(t, adminID, downCall(b1.String(), true, false)); r.Code != adminpb.Code_OK || !r.GetDown().Downed {
		t.Errorf("forced: %v", r)
	}

	s = setup(b2)
	if r := s.one(t, adminID, downCall(b2.String(), false, false)); r.Code != adminpb.Code_OK || !r.GetDown().Downed || r.GetDown().Reachable {
		t.Errorf("unreachable member: %v", r)
	}
	if len(s.backend.downed) != 1 || s.backend.downed[0] != b2.String() {
		t.Errorf("downed %v", s.backend.downed)
	}

	s = setup(b1, b2) // this member sees 1 of 3: it may be the one cut off
	if r := s.one(t, adminID, downCall(b2.String(), false, false)); r.Code != adminpb.Code_REFUSED || !strings.Contains(r.Error, "minority") {
		t.Errorf("from the minority side: %v", r)
	}

	if r := s.one(t, adminID, downCall(newID(t).String(), true, false)); r.Code != adminpb.Code_BAD_REQUEST || !strings.Contains(r.Error, "unknown member") {
		t.Errorf("unknown member: %v", r)
	}
	if r := s.one(t, adminID, downCall("not-a-peer-id", true, false)); r.Code != adminpb.Code_BAD_REQUEST {
		t.Errorf("malformed member id: %v", r)
	}
}

// TestStatsNamesMembersThatDidNotAnswer: a member that does not answer within the query
// timeout is listed with the shards the coordinator places there, and the code is PARTIAL.
func TestStatsNamesMembersThatDidNotAnswer(t *testing.T) {
	self, fine, stuck := newID(t), newID(t), newID(t)
	b := newFakeBackend(self.String(), fine.String(), stuck.String())
	b.stats.Regions[0].CoordinatorHere = true
	b.stats.Regions[0].Allocations = []*adminpb.Allocation{{Shard: "1", Node: self.String()}, {Shard: "2", Node: fine.String()}, {Shard: "3", Node: stuck.String()}, {Shard: "4", Node: stuck.String()}}
	s := newTestServer(t, b, Config{QueryTimeout: 50 * time.Millisecond, ReadOnlyOpen: true})
	s.callPeer = func(ctx context.Context, to peer.ID, _ *adminpb.Request) (*adminpb.Response, error) {
		if to == stuck {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &adminpb.Response{Result: &adminpb.Response_LocalStats{LocalStats: &adminpb.LocalStatsResponse{Node: to.String(), Status: "Up",
			Regions: []*adminpb.RegionStats{{EntityType: "counter", Shards: []*adminpb.ShardStats{{Shard: "2", Entities: 5}}}}}}}, nil
	}
	resp := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_Stats{Stats: &adminpb.StatsRequest{}}})
	st := resp.GetStats()
	if resp.Code != adminpb.Code_PARTIAL || st == nil || len(st.Members) != 2 || len(st.Failed) != 1 {
		t.Fatalf("%v", resp)
	}
	f := st.Failed[0]
	if f.Node != stuck.String() || !strings.Contains(f.Error, "no answer within 50ms") || len(f.Shards) != 1 || strings.Join(f.Shards[0].Shards, ",") != "3,4" {
		t.Errorf("failed member: %v", f)
	}
	for _, m := range st.Members {
		if len(m.Regions[0].Allocations) != 0 {
			t.Errorf("allocations leaked into the answer: %v", m)
		}
	}
	if r := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_Stats{Stats: &adminpb.StatsRequest{EntityTypes: []string{"nope"}}}}); r.Code != adminpb.Code_BAD_REQUEST {
		t.Errorf("unknown type: %v", r)
	}
}

// TestStatsAsksNoExitingMember: a member that has left (Exiting: its shards handed off,
// its process stopping) is not asked, so stats right after a shutdown is complete.
func TestStatsAsksNoExitingMember(t *testing.T) {
	self, gone := newID(t), newID(t)
	b := newFakeBackend(self.String(), gone.String())
	for _, m := range b.members.Members {
		if m.Node == gone.String() {
			m.Status = "Exiting"
		}
	}
	s := newTestServer(t, b, Config{QueryTimeout: 50 * time.Millisecond, ReadOnlyOpen: true})
	s.callPeer = func(_ context.Context, to peer.ID, _ *adminpb.Request) (*adminpb.Response, error) {
		if to == gone {
			return nil, errors.New("connection refused")
		}
		return &adminpb.Response{Result: &adminpb.Response_LocalStats{LocalStats: &adminpb.LocalStatsResponse{Node: to.String(), Status: "Up"}}}, nil
	}
	resp := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_Stats{Stats: &adminpb.StatsRequest{}}})
	if st := resp.GetStats(); resp.Code != adminpb.Code_OK || st == nil || len(st.Members) != 1 || len(st.Failed) != 0 {
		t.Fatalf("stats with an Exiting member: %v", resp)
	}
}

// TestLocate: the home comes from the coordinator on another member and the entity's
// liveness from the home; a silent home leaves the liveness unknown (never "no").
func TestLocate(t *testing.T) {
	self, coord, home := newID(t), newID(t), newID(t)
	b := newFakeBackend(self.String(), coord.String(), home.String())
	b.shards["s-u1"] = &adminpb.ShardInfoResponse{Coordinator: coord.String(), Cached: true, CachedHome: self.String(), CachedEpoch: 1}
	s := newTestServer(t, b, Config{QueryTimeout: 50 * time.Millisecond, ReadOnlyOpen: true})
	homeAnswers := true
	s.callPeer = func(ctx context.Context, to peer.ID, req *adminpb.Request) (*adminpb.Response, error) {
		info := &adminpb.ShardInfoResponse{Node: to.String()}
		switch {
		case to == coord:
			info.CoordinatorHere, info.Allocated, info.Home, info.Epoch = true, true, home.String(), 7
		case to == home && homeAnswers:
			info.Hosted, info.Alive, info.EntityState = true, req.GetShardInfo().Entity == "u1", "running"
		default:
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &adminpb.Response{Result: &adminpb.Response_ShardInfo{ShardInfo: info}}, nil
	}
	locate := &adminpb.Request{Call: &adminpb.Request_Locate{Locate: &adminpb.LocateRequest{EntityType: "counter", Entity: "u1"}}}
	resp := s.one(t, newID(t), locate)
	l := resp.GetLocate()
	if resp.Code != adminpb.Code_OK || l.Shard != "s-u1" || l.Home != home.String() || l.Epoch != 7 || l.Source != "coordinator" || !l.Alive || !l.AliveKnown || l.EntityState != "running" {
		t.Fatalf("%v", resp)
	}
	homeAnswers = false
	resp = s.one(t, newID(t), locate)
	if l := resp.GetLocate(); resp.Code != adminpb.Code_PARTIAL || l.Home != home.String() || len(l.Problems) != 1 || l.AliveKnown || l.Alive {
		t.Fatalf("home silent: %v (want alive unknown)", resp)
	}
	if r := s.one(t, newID(t), &adminpb.Request{Call: &adminpb.Request_Locate{Locate: &adminpb.LocateRequest{EntityType: "nope", Entity: "u1"}}}); r.Code != adminpb.Code_BAD_REQUEST {
		t.Errorf("unknown type: %v", r)
	}
}

// TestHealthStaysReadyOnceRegistered: as Akka's check, a region that registered once stays
// ready while it registers again with a new coordinator.
func TestHealthStaysReadyOnceRegistered(t *testing.T) {
	self := newID(t)
	b := newFakeBackend(self.String())
	b.stats.Regions[0].Registered = false
	s := newTestServer(t, b, Config{})
	health := &adminpb.Request{Call: &adminpb.Request_Health{Health: &adminpb.HealthRequest{}}}
	if h := s.one(t, self, health).GetHealth(); !h.Live || h.Ready || len(h.Reasons) != 1 {
		t.Fatalf("before registering: %v", h)
	}
	b.registered = true
	if h := s.one(t, self, health).GetHealth(); !h.Ready {
		t.Fatalf("registered: %v", h)
	}
	b.registered = false
	if h := s.one(t, self, health).GetHealth(); !h.Ready || h.Regions[0].Registered {
		t.Fatalf("re-registering: %v", h)
	}
	b.stats.Status = "Leaving"
	if h := s.one(t, self, health).GetHealth(); h.Ready {
		t.Fatalf("leaving: %v", h)
	}
}

// TestShutdownFollowsUntilLeft: progress while shards remain, then "left".
func TestShutdownFollowsUntilLeft(t *testing.T) {
	self, adminID := newID(t), newID(t)
	b := newFakeBackend(self.String())
	s := newTestServer(t, b, Config{Admins: []peer.ID{adminID}})
	go func() {
		time.Sleep(300 * time.Millisecond)
		b.reason = "left"
		close(b.done)
	}()
	out := s.call(t, adminID, shutdownCall)
	if len(out) < 2 {
		t.Fatalf("%d responses, want progress then the end", len(out))
	}
	first, last := out[0].GetShutdown(), out[len(out)-1]
	if !out[0].More || first.Phase != admin.PhaseHandingOff || first.Shards != 1 {
		t.Errorf("first: %v", out[0])
	}
	if last.More || last.Code != adminpb.Code_OK || last.GetShutdown().Phase != admin.PhaseLeft {
		t.Errorf("last: %v", last)
	}
}

func TestWatchEvents(t *testing.T) {
	self := newID(t)
	now := time.UnixMilli(1_000_000)
	se := wire.ShardingEvent{Type: "counter", Kind: pb.ShardingEvent_HANDOFF_COMPLETED, Shard: "3", From: "m1", Epoch: 1<<32 | 2, Took: 15 * time.Millisecond, At: now, Origin: "m0"}
	we, ok := watchEvent(self.String(), se, now)
	if !ok || we.Kind != "handoff-completed" || we.TookMs != 15 || we.Shard != "3" || we.Origin != "m0" {
		t.Errorf("%v", we)
	}
	we, ok = watchEvent(self.String(), membership.MemberChanged{Member: membership.Member{Node: "m2", Status: membership.Leaving}, Previous: membership.Up}, now)
	if !ok || we.Kind != "member-leaving" || we.Previous != "Up" {
		t.Errorf("%v", we)
	}
	if _, ok := watchEvent(self.String(), struct{}{}, now); ok {
		t.Error("an unknown event was passed on")
	}

	b := newFakeBackend(self.String())
	s := newTestServer(t, b, Config{})
	b.events <- se
	b.events <- membership.MemberChanged{Member: membership.Member{Node: "m2", Status: membership.Up}, New: true}
	b.events <- wire.ShardingEvent{Type: "echo", Kind: pb.ShardingEvent_SHARD_ALLOCATED, At: now}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	frame := marshal(t, &adminpb.Request{Call: &adminpb.Request_Watch{Watch: &adminpb.WatchRequest{EntityTypes: []string{"counter"}, NoMembers: true}}})
	out := s.callFrame(ctx, self, frame)
	var kinds []string
	for _, r := range out {
		if ev := r.GetEvent(); ev != nil {
			kinds = append(kinds, ev.Kind)
		}
	}
	if strings.Join(kinds, ",") != "handoff-completed" || out[0].Result != nil {
		t.Errorf("watch sent %v", out)
	}
}

func TestBadRequests(t *testing.T) {
	self := newID(t)
	s := newTestServer(t, newFakeBackend(self.String()), Config{ReadOnlyOpen: true})
	for name, req := range map[string]*adminpb.Request{
		"empty entity":   {Call: &adminpb.Request_Ask{Ask: &adminpb.AskRequest{EntityType: "counter"}}},
		"long entity":    {Call: &adminpb.Request_Tell{Tell: &adminpb.TellRequest{EntityType: "counter", Entity: strings.Repeat("x", 1025)}}},
		"unknown type":   {Call: &adminpb.Request_RegionState{RegionState: &adminpb.RegionStateRequest{EntityType: "nope"}}},
		"no type":        {Call: &adminpb.Request_RegionState{RegionState: &adminpb.RegionStateRequest{}}},
		"no call":        {},
		"shard too long": {Call: &adminpb.Request_ShardInfo{ShardInfo: &adminpb.ShardInfoRequest{EntityType: "counter", Shard: strings.Repeat("1", 300)}}},
	} {
		if r := s.one(t, self, req); r.Code != adminpb.Code_BAD_REQUEST || r.Error == "" {
			t.Errorf("%s: %v", name, r)
		}
	}
	if err := admin.CheckEntityID("\xff"); err == nil {
		t.Error("an entity id that is not UTF-8 passed") // protobuf refuses it too, but shardctl checks first
	}
	if r := s.callFrame(context.Background(), self, []byte{0x08, 0x63}); len(r) != 1 || r[0].Code != adminpb.Code_BAD_REQUEST || !strings.Contains(r[0].Error, "version") {
		t.Errorf("wrong version: %v", r)
	}
}

// TestAskTimeoutHonoured: an ask is given the timeout its caller asked for, beyond
// CallTimeout, up to MaxAskTimeout; a longer one is refused, not cut short.
func TestAskTimeoutHonoured(t *testing.T) {
	self, caller := newID(t), newID(t)
	b := newFakeBackend(self.String())
	s := newTestServer(t, b, Config{Admins: []peer.ID{caller}})
	ask := func(ms uint64) *adminpb.Request {
		return &adminpb.Request{Call: &adminpb.Request_Ask{Ask: &adminpb.AskRequest{EntityType: "counter", Entity: "a", Payload: []byte("get"), TimeoutMs: ms}}}
	}
	out := s.call(t, caller, ask(90_000))
	if len(out) != 1 || out[0].Code != adminpb.Code_OK {
		t.Fatalf("ask with 90 s: %v", out)
	}
	b.mu.Lock()
	wait := b.askWait
	b.mu.Unlock()
	if wait < 89*time.Second || wait > 90*time.Second {
		t.Errorf("ask given %v, want 90 s", wait)
	}
	out = s.call(t, caller, ask(uint64(admin.MaxAskTimeout.Milliseconds())+1))
	if len(out) != 1 || out[0].Code != adminpb.Code_BAD_REQUEST || !strings.Contains(out[0].Error, "at most 10m0s") {
		t.Errorf("ask beyond the maximum: %v", out)
	}
}

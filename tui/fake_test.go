package tui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// fakeSource is a scripted cluster: fixed members and stats, a watch stream of scripted
// events, and a record of the actions asked.
type fakeSource struct {
	mu        sync.Mutex
	entry     string
	members   *adminpb.MembersResponse
	stats     *adminpb.StatsResponse
	regions   map[string]*adminpb.RegionStateResponse // node/type
	handoffs  *adminpb.HandoffsResponse
	handErr   error // Handoffs' error
	handCalls int   // Handoffs calls so far
	events    []*adminpb.WatchEvent
	adminErr  error
	rebalance error // RebalanceStatus's error; nil: active
	asked     []string
	closed    bool
}

// testNode makes a peer-id-like name ending in its 8-character suffix.
func testNode(suffix string) string { return "12D3KooWTestTestTestTestTestTestTestTest" + suffix }

var (
	nodeA = testNode("AAAA1111")
	nodeB = testNode("BBBB2222")
	nodeC = testNode("CCCC3333")
)

// t0 is the fixed clock of the tests.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func newFake() *fakeSource {
	f := &fakeSource{
		entry: nodeA,
		members: &adminpb.MembersResponse{Self: nodeA, Leader: nodeA, Oldest: nodeA, Converged: true, Members: []*adminpb.MemberInfo{
			{Node: nodeA, Status: "Up", UpNumber: 1, Reachable: true, Oldest: true, Leader: true, AppVersion: "1.4.0", Roles: []string{"backend"}, Addrs: []string{"/ip4/127.0.0.1/tcp/1"}},
			{Node: nodeB, Status: "Up", UpNumber: 2, Reachable: true, AppVersion: "1.4.0", Roles: []string{"backend"}, Addrs: []string{"/ip4/127.0.0.1/tcp/2"}},
			{Node: nodeC, Status: "Up", UpNumber: 3, Reachable: false, AppVersion: "1.3.9", Roles: []string{"backend"}, Addrs: []string{"/ip4/127.0.0.1/tcp/3"}},
		}},
		regions: map[string]*adminpb.RegionStateResponse{},
	}
	f.stats = &adminpb.StatsResponse{Node: nodeA, EntityTypes: []string{"counter", "echo"},
		Members: []*adminpb.LocalStatsResponse{
			localStats(nodeA, true, map[string]int{"counter": 12, "echo": 3}),
			localStats(nodeB, false, map[string]int{"counter": 6, "echo": 3}),
		},
		Failed: []*adminpb.FailedMember{{Node: nodeC, Error: "no answer within 3s", Shards: []*adminpb.TypeShards{{EntityType: "counter", Shards: []string{"7", "8", "9"}}, {EntityType: "echo", Unknown: true}}}},
	}
	f.regions[nodeB+"/counter"] = &adminpb.RegionStateResponse{Node: nodeB, EntityType: "counter", Shards: []*adminpb.ShardState{
		{Shard: "3", Entities: []string{"user-3", "user-13"}, EntityCount: 2},
		{Shard: "4", Entities: []string{"user-4"}, EntityCount: 1},
		{Shard: "5", EntityCount: 0, Stopping: true},
	}}
	// The coordinators' view at t0: counter/7 (also in the stream) waits for two entities
	// at its old home, echo/1 (not in the stream) for a region to start buffering.
	f.handoffs = &adminpb.HandoffsResponse{Node: nodeA, Handoffs: []*adminpb.HandoffInfo{
		{EntityType: "counter", Shard: "7", From: nodeC, Epoch: 1<<32 | 4, Phase: "stopping-entities", Cause: "rebalance", ElapsedMs: 4900, PhaseElapsedMs: 4850,
			Buffered: 12, Stragglers: []string{"user-7", "user-17"}, ForceStopInMs: 3000, Coordinator: nodeA},
		{EntityType: "echo", Shard: "1", From: nodeB, Epoch: 1<<32 | 2, Phase: "begun", Cause: "rebalance", ElapsedMs: 300, PhaseElapsedMs: 300,
			WaitingRegions: []string{nodeC}, Buffered: 3, Coordinator: nodeA},
	}}
	ms := t0.Add(-5 * time.Second).UnixMilli()
	f.events = []*adminpb.WatchEvent{
		{AtUnixMs: ms, Kind: "member-up", Member: nodeB, Status: "Up"},
		{AtUnixMs: ms + 100, Kind: "handoff-started", EntityType: "counter", Shard: "7", From: nodeC, Epoch: 1<<32 | 4, Cause: "rebalance", Origin: nodeA},
		{AtUnixMs: ms + 150, Kind: "handoff-phase", EntityType: "counter", Shard: "7", Phase: "stopping", Origin: nodeA},
		{AtUnixMs: ms + 200, Kind: "handoff-started", EntityType: "counter", Shard: "2", From: nodeA, Cause: "graceful-shutdown", Origin: nodeA},
		{AtUnixMs: ms + 300, Kind: "handoff-completed", EntityType: "counter", Shard: "2", From: nodeA, TookMs: 80, Origin: nodeA},
		{AtUnixMs: ms + 420, Kind: "shard-allocated", EntityType: "counter", Shard: "2", To: nodeB, Origin: nodeA},
		{AtUnixMs: ms + 500, Kind: "member-unreachable", Member: nodeC},
		{AtUnixMs: ms + 600, Kind: "rebalance-round", EntityType: "echo", Shards: []string{"1"}, Origin: nodeA},
	}
	return f
}

// localStats is a member's answer to stats with n shards of each type, shard i holding i
// entities.
func localStats(node string, coordinator bool, n map[string]int) *adminpb.LocalStatsResponse {
	ls := &adminpb.LocalStatsResponse{Node: node, Status: "Up", Serving: true}
	for _, typ := range []string{"counter", "echo"} {
		r := &adminpb.RegionStats{EntityType: typ, Registered: true, CoordinatorHere: coordinator && typ == "counter"}
		for i := 0; i < n[typ]; i++ {
			r.Shards = append(r.Shards, &adminpb.ShardStats{Shard: fmt.Sprint(i), Entities: uint64(i % 4)})
		}
		ls.Regions = append(ls.Regions, r)
	}
	return ls
}

func (f *fakeSource) Entry() string { return f.entry }

func (f *fakeSource) Members(context.Context) (*adminpb.MembersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members, nil
}

func (f *fakeSource) Stats(context.Context) (*adminpb.StatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats, nil
}

func (f *fakeSource) Handoffs(context.Context) (*adminpb.HandoffsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handCalls++
	if f.handErr != nil {
		return nil, f.handErr
	}
	return f.handoffs, nil
}

// handoffCalls is how many times Handoffs was called.
func (f *fakeSource) handoffCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handCalls
}

func (f *fakeSource) RegionState(_ context.Context, m *adminpb.MemberInfo, typ string) (*adminpb.RegionStateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.regions[m.Node+"/"+typ]
	if !ok {
		return nil, fmt.Errorf("cannot reach member %s", m.Node)
	}
	return r, nil
}

func (f *fakeSource) Watch(ctx context.Context, fn func(*adminpb.WatchEvent)) error {
	f.mu.Lock()
	evs := f.events
	f.mu.Unlock()
	for _, ev := range evs {
		fn(ev)
	}
	<-ctx.Done()
	return nil
}

func (f *fakeSource) CheckAdmin(context.Context) error { return f.adminErr }

func (f *fakeSource) Supported(a Action) error {
	if a == ActionShutdown || a == ActionPause || a == ActionResume {
		return nil
	}
	return ErrNotSupported
}

func (f *fakeSource) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, s)
}

func (f *fakeSource) Shutdown(_ context.Context, m *adminpb.MemberInfo) error {
	f.record("shutdown " + m.Node)
	return f.adminErr
}

func (f *fakeSource) Drain(context.Context, string, bool) error { return ErrNotSupported }

func (f *fakeSource) RebalancePause(_ context.Context, paused bool) (bool, error) {
	f.record(fmt.Sprint("pause ", paused))
	return paused, nil
}

func (f *fakeSource) RebalanceStatus(context.Context) (bool, error) { return false, f.rebalance }

func (f *fakeSource) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// refused is the member's refusal of a non-admin identity.
var refused = &admin.CallError{Code: adminpb.Code_REFUSED, Message: "refused: down changes the cluster and needs an admin identity: caller 12D3KooWxyz is not in this member's --admin-allow"}

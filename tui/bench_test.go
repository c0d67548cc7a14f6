package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// loadedModel is a dashboard of a 10-member cluster hosting 1,000 shards of one type (100
// a member, 20 entities a shard), with a full event window, at w×h.
func loadedModel(b *testing.B, w, h int) Model {
	b.Helper()
	f := newFake()
	var members []*adminpb.MemberInfo
	stats := &adminpb.StatsResponse{Node: nodeA, EntityTypes: []string{"counter"}}
	for i := range 10 {
		node := testNode(fmt.Sprintf("NODE%04d", i))
		members = append(members, &adminpb.MemberInfo{Node: node, Status: "Up", UpNumber: uint64(i + 1), Reachable: true, Oldest: i == 0})
		r := &adminpb.RegionStats{EntityType: "counter", Registered: true, CoordinatorHere: i == 0}
		for s := range 100 {
			r.Shards = append(r.Shards, &adminpb.ShardStats{Shard: fmt.Sprint(i*100 + s), Entities: 20})
		}
		stats.Members = append(stats.Members, &adminpb.LocalStatsResponse{Node: node, Status: "Up", Regions: []*adminpb.RegionStats{r}})
	}
	f.members = &adminpb.MembersResponse{Self: members[0].Node, Leader: members[0].Node, Oldest: members[0].Node, Converged: true, Members: members}
	f.stats = stats
	f.events = nil
	m := newModel(b, testConfig(func(context.Context) (Source, error) { return f, nil }))
	m = update(b, m, tea.WindowSizeMsg{Width: w, Height: h})
	m = settle(b, m, m.Init())
	if len(m.shards.rows) != 10 {
		b.Fatalf("%d regions", len(m.shards.rows))
	}
	for i := range cap(m.events.buf) {
		m.applyEvents(eventsMsg{sub: m.sub, at: t0, events: []*adminpb.WatchEvent{churn(i, m.cluster.members)}})
	}
	return m
}

// churn is the i-th event of a busy cluster: handoffs of the 1,000 shards begun, moving
// on, finishing and re-allocated, with member events between.
func churn(i int, members []*adminpb.MemberInfo) *adminpb.WatchEvent {
	shard := fmt.Sprint(i / 4 % 1000)
	from, to := members[i%len(members)].Node, members[(i+1)%len(members)].Node
	at := t0.UnixMilli() - 1000 + int64(i%1000)
	switch i % 4 {
	case 0:
		return &adminpb.WatchEvent{AtUnixMs: at, Kind: "handoff-started", EntityType: "counter", Shard: shard, From: from, Cause: "rebalance", Origin: from}
	case 1:
		return &adminpb.WatchEvent{AtUnixMs: at, Kind: "handoff-phase", EntityType: "counter", Shard: shard, Phase: "stopping", Origin: from}
	case 2:
		return &adminpb.WatchEvent{AtUnixMs: at, Kind: "handoff-completed", EntityType: "counter", Shard: shard, From: from, TookMs: 12, Origin: from}
	}
	return &adminpb.WatchEvent{AtUnixMs: at, Kind: "shard-allocated", EntityType: "counter", Shard: shard, To: to, Origin: from}
}

// BenchmarkUpdateView: the cost of one batch under 50,000 events a minute (833/s): the 28
// events that arrive within batchWindow (1/30 s), applied by Update, then View — per view,
// at 120×40, with 1,000 shards and a full event window. ns/op is the cost of one batch; at
// 30 batches a second the dashboard spends 30 × ns/op of each second on the stream.
func BenchmarkUpdateView(b *testing.B) {
	const batch = 28 // 50,000/min ÷ 60 s ÷ 30 batches/s ≈ 27.8
	for _, v := range []struct {
		name string
		key  string
	}{{"cluster", "1"}, {"shards", "2"}, {"handoffs", "3"}, {"events", "4"}, {"actions", "5"}} {
		b.Run(v.name, func(b *testing.B) {
			m := loadedModel(b, 120, 40)
			m = press(b, m, v.key)
			members := m.cluster.members
			evs := make([]*adminpb.WatchEvent, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range evs {
					evs[j] = churn(i*batch+j, members)
				}
				next, _ := m.Update(eventsMsg{sub: m.sub, events: evs, at: t0.Add(time.Duration(i) * time.Millisecond)})
				m = next.(Model)
				_ = m.View()
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkStatsRefresh: applying a stats answer of 1,000 shards on 10 members (once per
// refresh, every 2 s by default), then a View of the Shards view.
func BenchmarkStatsRefresh(b *testing.B) {
	m := loadedModel(b, 120, 40)
	m = press(b, m, "2")
	resp := m.cfg.Connect
	src, _ := resp(context.Background())
	stats, _ := src.Stats(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next, _ := m.Update(statsMsg{resp: stats, at: t0})
		m = next.(Model)
		_ = m.View()
	}
}

// streamSource emits n churn events as fast as the subscription takes them.
type streamSource struct {
	*fakeSource
	n       int
	members []*adminpb.MemberInfo
}

func (s *streamSource) Watch(ctx context.Context, fn func(*adminpb.WatchEvent)) error {
	for i := range s.n {
		fn(churn(i, s.members))
	}
	<-ctx.Done()
	return nil
}

// BenchmarkStream: the whole path of the watch stream — the subscription's goroutine, the
// re-armed wait command, Update and a View of the Events view per batch — for 50,000 events
// (a minute's worth at the target rate) sent as fast as possible. ns/op is per event;
// batches/op and dropped/op say how the load was absorbed.
func BenchmarkStream(b *testing.B) {
	const n = 50000
	base := loadedModel(b, 120, 40)
	base = press(b, base, "4")
	b.ResetTimer()
	var batches, dropped int64
	for i := 0; i < b.N; i++ {
		src := &streamSource{fakeSource: newFake(), n: n, members: base.cluster.members}
		m := base
		m.src = src
		m.watchGen++
		started := m.watchCmd(m.watchGen)().(watchStartedMsg)
		next, _ := m.Update(started)
		m = next.(Model)
		seen := 0
		for seen < n-int(m.sub.dropped.Load()) {
			msg := m.waitEventsCmd(m.sub)().(eventsMsg)
			seen += len(msg.events)
			batches++
			next, _ := m.Update(msg)
			m = next.(Model)
			_ = m.View()
		}
		dropped += m.sub.dropped.Load()
		m.sub.cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	b.ReportMetric(float64(batches)/float64(b.N), "batches/op")
	b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
}

package simulator

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

func TestShardsSpreadOverRegions(t *testing.T) {
	// 4 shards over 3 regions: the first shards seen go to regions 1, 2, 3 and the fourth
	// to region 1 again; the limit of each region is divided among its own shards only.
	s, err := New(Config{Settings: passivation.Limited(60, passivation.LRU()), Regions: 3, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	extractor, _ := shard.NewHashCodeExtractor(4)
	order := []shard.ID{}
	for i := 0; len(order) < 4; i++ {
		id := fmt.Sprint(i)
		sh := extractor.ShardID(shard.EntityID(id))
		if _, seen := s.shardOf[sh]; !seen {
			order = append(order, sh)
		}
		s.Access(id)
	}
	for k, sh := range order {
		if got, want := s.shardRegion[s.shardOf[sh]], k%3; got != want {
			t.Fatalf("shard %s (seen %d-th) in region %d, want %d", sh, k+1, got, want)
		}
	}
	if got := s.regions[0].PerShardLimit(); got != 30 {
		t.Fatalf("region 1 has 2 shards: share %d, want 30", got)
	}
	if got := s.regions[1].PerShardLimit(); got != 60 {
		t.Fatalf("region 2 has 1 shard: share %d, want 60", got)
	}
}

func TestIdleStrategyInVirtualTime(t *testing.T) {
	// Each access takes a virtual millisecond; with a 1 s timeout, an entity used once every
	// 2,000 accesses is always passive again, one used every 500 accesses stays active.
	s := passivation.DefaultSettings()
	s.Idle = passivation.IdleSettings{Timeout: time.Second}
	var ids []string
	for i := range 20_000 {
		switch {
		case i%2000 == 0:
			ids = append(ids, "rare")
		case i%500 == 0:
			ids = append(ids, "regular")
		default:
			ids = append(ids, fmt.Sprint("filler-", i%100))
		}
	}
	sim, err := New(Config{Settings: s, Regions: 1, Shards: 10, Tick: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rareMisses, regularMisses := 0, 0
	for _, id := range ids {
		miss := !sim.active(id)
		switch {
		case id == "rare" && miss:
			rareMisses++
		case id == "regular" && miss:
			regularMisses++
		}
		sim.Access(id)
	}
	if rareMisses != 10 || regularMisses != 1 {
		t.Fatalf("rare missed %d of 10, regular %d of 30 (want 10 and 1)", rareMisses, regularMisses)
	}
	if st := sim.Stats(); st.Passivations == 0 || st.Passivations > st.Activations {
		t.Fatalf("stats %+v", st)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Settings: passivation.DefaultSettings(), Regions: 0, Shards: 10},
		{Settings: passivation.DefaultSettings(), Regions: 1, Shards: 0},
		{Settings: passivation.DefaultSettings(), Regions: 1, Shards: 1, Tick: -time.Second},
		{Settings: passivation.Limited(10, passivation.SegmentedLRU(0.1, 0.1)), Regions: 1, Shards: 1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted it", cfg)
		}
	}
}

func TestActiveRate(t *testing.T) {
	if got := (Stats{Accesses: 200, Activations: 150}).ActiveRate(); got != 25 {
		t.Fatalf("ActiveRate = %v, want 25", got)
	}
	if got := (Stats{}).ActiveRate(); got != 0 {
		t.Fatalf("ActiveRate of nothing = %v", got)
	}
}

// A trace replayed by index (RunTrace, what shardctl does) counts what the same accesses
// given one by one as strings (Access) count.
func TestRunTraceMatchesAccess(t *testing.T) {
	var ids []string
	for i := range 50_000 {
		ids = append(ids, fmt.Sprint(i*i%7919)) // 7,919 distinct ids, skewed
	}
	for _, settings := range []passivation.Settings{passivation.DefaultStrategy().WithActiveEntityLimit(500), passivation.Limited(300, passivation.LRU())} {
		cfg := Config{Settings: settings, Regions: 3, Shards: 20}
		got, err := RunTrace(cfg, NewTrace(ids))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			s.Access(id)
		}
		if want := s.Stats(); got != want {
			t.Fatalf("%s: RunTrace %+v, Access %+v", settings, got, want)
		}
		if got.Activations == got.Accesses || got.Passivations == 0 {
			t.Fatalf("%s: nothing was passivated: %+v", settings, got)
		}
	}
}

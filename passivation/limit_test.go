package passivation

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/shard"
)

func TestRegionDividesTheLimitAmongActiveShards(t *testing.T) {
	r, err := NewRegion[string](Limited(100, LRU()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []Passivate[string]
	a, out := r.StartShard("a", out[:0])
	if len(out) != 0 || a.Limit() != 100 || r.PerShardLimit() != 100 {
		t.Fatalf("one shard: limit %d, passivated %v", a.Limit(), out)
	}
	for i := range 100 {
		if p := a.Access(fmt.Sprint("a", i), time.Time{}, nil); len(p) != 0 {
			t.Fatalf("passivated %v under the limit", p)
		}
	}

	// A second shard halves a's share: its 50 least recently used entities go.
	b, out := r.StartShard("b", out[:0])
	if a.Limit() != 50 || b.Limit() != 50 || len(out) != 50 {
		t.Fatalf("two shards: limits %d and %d, %d passivated", a.Limit(), b.Limit(), len(out))
	}
	for i, ps := range out {
		if ps.Shard != "a" || ps.Entity != fmt.Sprint("a", i) {
			t.Fatalf("passivation %d = %+v, want a's entity a%d", i, ps, i)
		}
	}
	for i := range 50 {
		b.Access(fmt.Sprint("b", i), time.Time{}, nil)
	}

	// A third: shares of 33, both a and b give up 17.
	_, out = r.StartShard("c", out[:0])
	count := map[shard.ID]int{}
	for _, ps := range out {
		count[ps.Shard]++
	}
	if r.PerShardLimit() != 33 || count["a"] != 17 || count["b"] != 17 || len(count) != 2 {
		t.Fatalf("three shards: share %d, passivated per shard %v", r.PerShardLimit(), count)
	}

	// Starting an active shard changes nothing.
	if p, out := r.StartShard("a", out[:0]); p != a || len(out) != 0 || r.ActiveShards() != 3 {
		t.Fatalf("restarting a: same policy %v, passivated %v", p == a, out)
	}

	// c stops: a and b get 50 again, nothing to passivate.
	if out = r.StopShard("c", out[:0]); len(out) != 0 || a.Limit() != 50 || r.Shard("c") != nil || r.Shard("b") != b {
		t.Fatalf("after c stopped: a's limit %d, passivated %v", a.Limit(), out)
	}
	if out = r.StopShard("nope", out[:0]); len(out) != 0 || r.ActiveShards() != 2 {
		t.Fatal("stopping an unknown shard changed something")
	}

	// The operator lowers the region's limit to 20: 10 per shard.
	out = r.SetLimit(20, out[:0])
	count = map[shard.ID]int{}
	for _, ps := range out {
		count[ps.Shard]++
	}
	if a.Limit() != 10 || count["a"] != 23 || count["b"] != 23 {
		t.Fatalf("limit 20: a's share %d, passivated %v", a.Limit(), count)
	}
	if a.Len() != 10 || b.Len() != 10 {
		t.Fatalf("after the cut: a holds %d, b %d", a.Len(), b.Len())
	}
}

func TestRegionShareRoundsDown(t *testing.T) {
	r, _ := NewRegion[int](Limited(10, LRU()), nil)
	for i := range 11 {
		r.StartShard(shard.ID(fmt.Sprint(i)), nil)
	}
	if r.PerShardLimit() != 0 {
		t.Fatalf("10 entities over 11 shards: share %d, want 0 as in Akka", r.PerShardLimit())
	}
}

func TestRegionWithoutLimit(t *testing.T) {
	r, err := NewRegion[int](DefaultSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := r.StartShard("s", nil)
	for k := range 1000 {
		p.Access(k, time.Time{}, nil)
	}
	r.StartShard("t", nil)
	if out := r.SetLimit(1, nil); len(out) != 0 || p.Len() != 1000 {
		t.Fatalf("an idle-only region passivated %d entities on a limit change", len(out))
	}
}

func TestNewRegionRejectsBadSettings(t *testing.T) {
	if _, err := NewRegion[int](DefaultStrategy(), nil); err == nil {
		t.Fatal("NewRegion accepted a filter without a hasher")
	}
}

func TestRegionSetLimitRejectsNonPositive(t *testing.T) {
	r, _ := NewRegion[int](Limited(10, LRU()), nil)
	defer func() {
		if recover() == nil {
			t.Fatal("SetLimit(0) did not panic")
		}
	}()
	r.SetLimit(0, nil)
}

package node

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/coordinator"
)

func TestExpiredHistoryKeepsTheNewestPerShardWithinRetention(t *testing.T) {
	now := time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)
	var recs []PlacementRecord
	for i := range 5 { // shard 1: five records a day apart, the newest first in the slice
		recs = append(recs, PlacementRecord{Type: "counter", Shard: "1", Epoch: coordinator.NewEpoch(1, uint32(5-i)), At: now.Add(-time.Duration(i) * 24 * time.Hour)})
	}
	recs = append(recs, PlacementRecord{Type: "counter", Shard: "2", Epoch: coordinator.NewEpoch(1, 1), At: now.Add(-10 * 24 * time.Hour)})
	recs = append(recs, PlacementRecord{Type: "echo", Shard: "1", Epoch: coordinator.NewEpoch(1, 1), At: now})
	got := expiredHistory(recs, now, HistoryConfig{MaxPerShard: 3, Retention: 7 * 24 * time.Hour})
	var names []string
	for _, r := range got {
		names = append(names, r.Type+"/"+string(r.Shard)+"@"+r.Epoch.String())
	}
	want := []string{"counter/1@1.1", "counter/1@1.2", "counter/2@1.1"}
	if len(names) != len(want) {
		t.Fatalf("expired %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("expired %v, want %v", names, want)
		}
	}
}

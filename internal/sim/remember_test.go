package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// TestRememberedEntitiesSurviveAFullRestart: every member of a cluster with remembered
// entities dies (kill -9); when they start again, the coordinator loads the stored shards,
// and every remembered entity runs again without a message — passivated ones excepted.
func TestRememberedEntitiesSurviveAFullRestart(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			typ := testType("counter", 3)
			typ.Shard.Remember = shard.Remember{Enabled: true, FailureBackoff: time.Second}
			s := New(Options{Seed: seed, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 30})
			s.store.FailRate = 0.05
			for range 3 {
				s.AddNode(nil, "1")
			}
			s.Start(1)
			s.Start(2, 1)
			s.Start(3, 1)
			s.RunFor(5 * time.Second)
			for i := range 60 {
				s.Send(1+i%3, "counter", shard.EntityID(fmt.Sprintf("e%d", i)))
			}
			s.RunFor(6 * time.Second) // failed writes are retried after a second
			if got := len(s.remembered("counter")); got != 60 {
				t.Fatalf("remembered %d of 60 entities", got)
			}
			for i := 1; i <= 3; i++ {
				s.Kill(i)
			}
			s.RunFor(time.Second)
			s.Start(1)
			s.Start(2, 1)
			s.Start(3, 1)
			var err error
			if !s.RunUntil(func() bool { err = s.checkRemembered("counter"); return err == nil }, 30*time.Second) {
				t.Fatalf("after a full restart: %v\n%s", err, s.Status())
			}
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
		})
	}
}

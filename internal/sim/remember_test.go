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
			s := killedRememberingCluster(t, seed, 0.05, remembering, 60)
			startThree(s)
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

// killedRememberingCluster is a cluster of three members, its disks failing at diskFailRate,
// that remembered entities counters (e0, e1, …; the type's shards remember with rem) and was
// then killed as a whole (kill -9 of every member).
func killedRememberingCluster(t *testing.T, seed uint64, diskFailRate float64, rem shard.Remember, entities int) *Sim {
	t.Helper()
	typ := testType("counter", 3)
	typ.Shard.Remember = rem
	s := New(Options{Seed: seed, Membership: membership.DefaultConfig(), Types: []engine.TypeConfig{typ}, NumberOfShards: 30})
	s.DiskFailRate = diskFailRate
	for range 3 {
		s.AddNode(nil, "1")
	}
	startThree(s)
	s.RunFor(5 * time.Second)
	for i := range entities {
		s.Send(1+i%3, "counter", shard.EntityID(fmt.Sprintf("e%d", i)))
	}
	s.RunFor(6 * time.Second) // failed writes are retried after a second
	if got := len(s.remembered("counter")); got != entities {
		t.Fatalf("remembered %d of %d entities", got, entities)
	}
	for i := 1; i <= 3; i++ {
		s.Kill(i)
	}
	s.RunFor(time.Second)
	return s
}

// remembering is the shards' remember-entities setting of the full-restart tests.
var remembering = shard.Remember{Enabled: true, FailureBackoff: time.Second}

// startThree starts members 1, 2 and 3: the first forms the cluster, the others join it.
func startThree(s *Sim) {
	s.Start(1)
	s.Start(2, 1)
	s.Start(3, 1)
}

// TestFullRestartWithSeedsOnly: every member killed and started again with the others as
// seeds, none forming a cluster by itself (the daemons' supervisors after the split-brain
// resolver downed every member): the member with the lowest id forms one, the others join
// it, and every remembered entity runs again — invariants checked after every step.
func TestFullRestartWithSeedsOnly(t *testing.T) {
	for seed := uint64(1); seed <= uint64(shortRuns(20, 20, 5)); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := killedRememberingCluster(t, seed, 0, remembering, 60)
			s.Start(3, 1, 2)
			s.Start(1, 2, 3)
			s.Start(2, 3, 1)
			var err error
			if !s.RunUntil(func() bool { err = s.checkRemembered("counter"); return err == nil }, 60*time.Second) {
				t.Fatalf("after a full restart with seeds only: %v\n%s", err, s.Status())
			}
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
		})
	}
}

// TestAdaptiveRecoveryAfterAFullRestart: with entity-recovery-strategy = adaptive and a store
// whose disk fails 20% of the operations on shard units, a full restart of a cluster with 900 remembered entities
// brings every one of them back on exactly one member (the entity runtime fails the run if an
// entity starts where an incarnation of it is alive), throttled by the budget (900 starts at
// most 200/s cluster-wide take more than 4 s) which backs off on the failures. Whether a
// failure lands in a window the budget judges is chance (1 seed in 20 sees none), so the
// back-offs are counted over the seeds.
func TestAdaptiveRecoveryAfterAFullRestart(t *testing.T) {
	const entities = 900
	decreases, seeds := 0, 0
	defer func() {
		if !t.Failed() && decreases < seeds {
			t.Errorf("the budgets backed off %d times in %d restarts, with 20%% of the units' disk operations failing", decreases, seeds)
		}
	}()
	for seed := uint64(1); seed <= uint64(shortRuns(5, 5, 1)); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rem := remembering
			rem.Adaptive = shard.Adaptive{Enabled: true, InitialRate: 50, MaxRate: 200, MinRate: 10, TargetLatency: 100 * time.Millisecond, Interval: 500 * time.Millisecond}
			s := killedRememberingCluster(t, seed, 0, rem, entities)
			s.DiskFailRate = 0.2 // of the units' disk operations (the metadata group's storage does not fail here)
			restart := s.Elapsed()
			startThree(s)
			var err error
			if !s.RunUntil(func() bool { err = s.checkRemembered("counter"); return err == nil }, 60*time.Second) {
				t.Fatalf("after a full restart: %v\n%s", err, s.Status())
			}
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
			took := s.Elapsed() - restart
			seeds++
			before := decreases
			for _, n := range s.Nodes() {
				b := n.E.RecoveryBudget("counter")
				if b == nil {
					t.Fatal("no recovery budget")
				}
				decreases += b.Decreases
			}
			t.Logf("all %d running %v after the restart; the budgets backed off %d times", entities, took, decreases-before)
			if took < 4*time.Second {
				t.Errorf("recovered in %v: faster than 200 starts/s allow", took)
			}
		})
	}
}

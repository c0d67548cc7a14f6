package sim

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

var (
	shardingRuns = flag.Int("sharding.runs", 300, "random schedules TestShardingSoak runs (-short: 30)")
	shardingSeed = flag.Uint64("sharding.seed", 0, "run only this schedule seed (replay a failure)")
)

// TestShardingSoak runs random schedules of joins, graceful leaves, kill -9, pauses,
// partitions and operator directives (drain, rebalance pause, pins, type stop) while members send messages to 200 entities in 30 shards, with no automatic
// passivation, an idle timeout, or a small active-entity limit. After every delivered
// message: at most one live instance of an entity handles messages, no shard runs on two
// members, statuses only move forward, removed members do not run, no member runs more
// entities than the active-entity limit. At the end, with
// the network healed: every message was handled, rejected with an error, or lost with a
// cause; a final message to every entity is handled; the shards are balanced; with an idle
// timeout, every entity stops once messages stop; drained members hold no shard and pinned
// shards run on their pins.
func TestShardingSoak(t *testing.T) {
	runs := *shardingRuns
	runs = shortRuns(runs, 30, 5)
	if v := os.Getenv("SHARDMESH_SHARDING_SOAK_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	first := uint64(1)
	if *shardingSeed != 0 {
		first, runs = *shardingSeed, 1
	}
	var sent, ok int
	for seed := first; seed < first+uint64(runs); seed++ {
		s, err := shardingSchedule(t, seed)
		sent += s.traffic.sent
		for _, f := range s.traffic.fates {
			if f == handled {
				ok++
			}
		}
		if err != nil {
			t.Fatalf("schedule seed %d failed: %v\n%s\nreplay: go test ./internal/sim -run TestShardingSoak -sharding.seed=%d -v\ntimeline:\n%s",
				seed, err, s.TrafficReport(), seed, strings.Join(s.Timeline(), "\n"))
		}
	}
	t.Logf("%d schedules, %d messages sent, %d handled; invariants checked after every delivered message", runs, sent, ok)
}

func shardingSchedule(t *testing.T, seed uint64) (*Sim, error) {
	cryptotest.SetGlobalRandom(t, seed) // the metadata group's elections and replica ids draw from crypto/rand
	r := rand.New(rand.NewPCG(seed, 0x5ad))
	cfg := membership.DefaultConfig()
	cfg.SplitBrainResolver.StableAfter = time.Duration(2+r.IntN(3)) * time.Second
	typ := testType("counter", 1)
	typ.Coordinator.RebalanceInterval = 5 * time.Second
	typ.Coordinator.HandoffTimeout = 10 * time.Second
	// Automatic passivation (none, idle, or a small active-entity limit), or remembered
	// entities with a store that fails now and then.
	remember := false
	switch r.IntN(4) {
	case 1:
		typ.Passivation = passivation.Disabled().WithIdleTimeout(time.Duration(1+r.IntN(3)) * time.Second)
	case 2:
		typ.Passivation = passivation.DefaultStrategy().WithActiveEntityLimit(20 + r.IntN(40))
	case 3:
		remember = true
		typ.Shard.Remember = shard.Remember{Enabled: true, RestartBackoff: time.Second, FailureBackoff: time.Duration(1+r.IntN(2)) * time.Second}
		if r.IntN(2) == 0 {
			typ.Shard.Remember.RecoveryFrequency, typ.Shard.Remember.RecoveryBatch = 100*time.Millisecond, 1+r.IntN(10)
		}
	}
	s := New(Options{Seed: seed, Membership: cfg, Types: []engine.TypeConfig{typ}, NumberOfShards: 30})
	if remember {
		s.DiskFailRate = []float64{0, 0.02, 0.1}[r.IntN(3)]
	}
	s.Net.Loss = []float64{0, 0, 0.01}[r.IntN(3)]
	s.Net.MaxLatency = []time.Duration{2 * time.Millisecond, 20 * time.Millisecond}[r.IntN(2)]

	size := 3 + r.IntN(3)
	for range size {
		s.AddNode(nil, "1")
	}
	s.Start(1)
	for i := 2; i <= size; i++ {
		s.Start(i, 1)
	}
	s.RunFor(3 * time.Second)

	running := s.Running
	pick := func(from []int) int { return from[r.IntN(len(from))] }
	entity := func() shard.EntityID { return shard.EntityID(fmt.Sprintf("e%d", r.IntN(200))) }
	load := func(d time.Duration) {
		for end := s.Now().Add(d); s.Now().Before(end); {
			if live := running(); len(live) > 0 {
				s.Send(pick(live), "counter", entity())
			}
			s.RunFor(time.Duration(10+r.IntN(40)) * time.Millisecond)
		}
	}

	for step := 0; step < 6+r.IntN(6); step++ {
		live := running()
		var dead, paused []int
		for _, n := range s.Nodes() {
			switch {
			case n.Paused && n.Alive:
				paused = append(paused, n.Index)
			case !n.Alive:
				dead = append(dead, n.Index)
			}
		}
		switch k := r.IntN(9); {
		case k == 0 && len(live) > 2:
			s.Kill(pick(live))
		case k == 1 && len(dead) > 0 && len(live) > 0:
			s.Start(pick(dead), pick(live))
		case (k == 2 || k == 3) && len(live) > 0 && len(s.Nodes()) < 8:
			n := s.AddNode(nil, "1")
			s.Start(n.Index, pick(live))
		case k == 4 && len(live) > 2:
			s.Pause(pick(live))
		case k == 5 && len(paused) > 0:
			s.Resume(pick(paused))
		case k == 6 && len(live) > 2:
			s.Leave(pick(live))
		case k == 7:
			var a, b []int
			for _, n := range s.Nodes() {
				if r.IntN(3) == 0 {
					b = append(b, n.Index)
				} else {
					a = append(a, n.Index)
				}
			}
			s.logf("partition %v / %v", a, b)
			s.Net.Partition(a, b)
		default:
			s.logf("heal")
			s.Net.Heal()
		}
		if r.IntN(3) == 0 {
			operate(s, r, running())
		}
		load(time.Duration(2+r.IntN(10)) * time.Second)
		if s.Err() != nil {
			return s, s.Err()
		}
	}
	// The type back in service and rebalancing on; drains only while an undrained member
	// runs; pins stay.
	d := s.Directives()
	d.Stopped, d.RebalancePaused = nil, false
	undrained := 0
	for _, i := range running() {
		if !d.Draining[s.Node(i).ID] {
			undrained++
		}
	}
	if undrained == 0 {
		d.Draining = nil
	}
	s.SetDirectives(d)
	operated := len(d.Draining) > 0 || len(d.Pins["counter"]) > 0

	// Heal, resume, settle: the survivors converge and take every shard.
	s.logf("heal, resume all, and settle")
	s.Net.Heal()
	s.Net.Loss = 0
	for _, n := range s.Nodes() {
		if n.Paused {
			s.Resume(n.Index)
		}
	}
	settle := 60 * time.Second
	if !s.RunUntil(func() bool { return len(running()) == 0 || s.Converged() }, settle) {
		return s, fmt.Errorf("survivors did not converge within %v:\n%s", settle, s.Status())
	}
	if len(running()) == 0 {
		return s, s.Err() // every member stopped by the downing rules: nothing to check
	}
	// Supervisors restart the members the downing rules stopped and those killed, with their
	// disks: a shard's records are on a replica set of three, and a set that lost two of
	// them (downed or killed before a move took them out) needs one back.
	supervise(s, r, running(), true)
	if !s.RunUntil(s.Converged, settle) {
		return s, fmt.Errorf("survivors and restarted members did not converge within %v:\n%s", settle, s.Status())
	}
	s.RunFor(5 * time.Second) // regions register with the coordinator, stragglers settle
	// A directive change whose write failed (a disk fault, a quorum cut by the partition) is
	// run again, as an operator runs a command again that failed.
	for try := 0; try < 5 && len(directiveChanges(s.storedDirectives(), d)) > 0 && len(running()) > 0; try++ {
		s.SetDirectives(d)
		s.RunFor(2 * time.Second)
	}
	live := running()
	if len(live) == 0 {
		return s, s.Err()
	}
	// Every remembered entity runs again, on exactly one member, without a message: after
	// kills, handoffs and restarts.
	if remember {
		var err error
		if !s.RunUntil(func() bool { err = s.checkRemembered("counter"); return err == nil }, 20*time.Second) {
			return s, fmt.Errorf("remembered entities not all running 20 s after settling: %w", err)
		}
	}
	// Every member follows the directives stored (the type is back in service everywhere):
	// a change written during a fault may have reached the stores without its announcement,
	// and is read at the next refresh.
	var err error
	if !s.RunUntil(func() bool { err = s.directivesFollowed(); return err == nil }, 10*time.Second) {
		return s, fmt.Errorf("directives not followed 10 s after settling: %w", err)
	}
	// A final message to every entity: each is handled.
	before := s.traffic.next
	for i := range 200 {
		s.Send(pick(live), "counter", shard.EntityID(fmt.Sprintf("e%d", i)))
	}
	if !s.RunUntil(func() bool {
		for m := before + 1; m <= s.traffic.next; m++ {
			if s.traffic.fates[m] != handled {
				return false
			}
		}
		return true
	}, 20*time.Second) {
		var why []string
		for m := before + 1; m <= s.traffic.next && len(why) < 5; m++ {
			if s.traffic.fates[m] != handled {
				why = append(why, fmt.Sprintf("message %d: %s", m, s.traffic.causeOf[m]))
			}
		}
		return s, fmt.Errorf("the final message to every entity was not all handled within 20 s: %v", why)
	}
	// Drained members hold no shard; pinned shards run on their pins. Then, with the
	// directives taken back, the shards spread out again.
	rounds := time.Duration(2)
	if operated {
		var err error
		if !s.RunUntil(func() bool { err = s.checkDirectives("counter"); return err == nil }, 30*time.Second) {
			return s, fmt.Errorf("directives not followed 30 s after settling: %w\n%s", err, s.DescribeShards("counter"))
		}
		s.SetDirectives(engine.Directives{})
		rounds = 10 // a drained member fills up again a few shards per round
	}
	// Within two rebalance rounds the shards are balanced.
	if !s.RunUntil(func() bool { return s.Spread("counter") <= 1 }, rounds*typ.Coordinator.RebalanceInterval+time.Second) {
		return s, fmt.Errorf("shards not balanced within %d rebalance rounds:\n%s", rounds, s.DescribeShards("counter"))
	}
	if u := s.unaccounted(); len(u) > 0 {
		return s, fmt.Errorf("%d messages neither handled, rejected nor lost with a cause (first: %d, last seen %s)", len(u), u[0], s.traffic.seen[u[0]])
	}
	// With an idle timeout, entities that get no more messages all stop.
	if idle := typ.Passivation.Idle.Timeout; idle > 0 {
		if !s.RunUntil(func() bool { return s.LiveEntities("counter") == 0 }, idle+typ.Passivation.Idle.CheckInterval()+time.Second) {
			return s, fmt.Errorf("%d entities still live %v after the last message, with an idle timeout of %v",
				s.LiveEntities("counter"), idle+typ.Passivation.Idle.CheckInterval()+time.Second, idle)
		}
	}
	return s, s.Err()
}

// operate changes one of the operator's directives at random: drain or undrain a member,
// pause or resume rebalancing, pin or unpin a shard, stop or start the entity type.
func operate(s *Sim, r *rand.Rand, running []int) {
	d := s.Directives()
	switch r.IntN(4) {
	case 0:
		if len(d.Draining) > 0 && r.IntN(2) == 0 {
			d.Draining = nil
		} else if len(running) > 1 {
			d.Draining[s.Node(running[r.IntN(len(running))]).ID] = true
		}
	case 1:
		d.RebalancePaused = !d.RebalancePaused
	case 2:
		if len(running) == 0 {
			return
		}
		if d.Pins["counter"] == nil {
			d.Pins["counter"] = map[shard.ID]membership.NodeID{}
		}
		sh := shard.ID(strconv.Itoa(r.IntN(30)))
		if _, pinned := d.Pins["counter"][sh]; pinned {
			delete(d.Pins["counter"], sh)
		} else {
			d.Pins["counter"][sh] = s.Node(running[r.IntN(len(running))]).ID
		}
	case 3:
		d.Stopped["counter"] = !d.Stopped["counter"]
	}
	s.SetDirectives(d)
}

// TestShardingReplicaSetSeeds replays the schedules of TestShardingSoak that found the
// replica-set store's bugs, by name, in -short runs too:
//
//   - 37, 48, 66: found and fixed earlier (votes of absent replicas, leaving before the
//     replicas moved off);
//   - 93: a restarted member answered metadata reads from its stale disk before its first
//     placement (a stopped type stayed stopped);
//   - 224: a member whose replicas were off stopped announcing its departure while a
//     handoff of its shards took handoff-timeout: the mark expired, sets moved back onto
//     it, and it left with them.
func TestShardingReplicaSetSeeds(t *testing.T) {
	for _, seed := range []uint64{37, 48, 66, 93, 224} {
		if s, err := shardingSchedule(t, seed); err != nil {
			t.Errorf("seed %d: %v\n%s", seed, err, strings.Join(s.Timeline(), "\n"))
		}
	}
}

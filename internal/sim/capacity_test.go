package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/membership"
)

// TestCapacity runs the capacity simulator on 20 members with each fault, under keep-majority
// and lease-majority: the figures it reports hold together (a killed member removed within
// detection + stable-after + down-removal-margin + 2 s and its shards running again after that, one side of the
// partition kept, a member paused past the detector removed and stopped when it resumes).
func TestCapacity(t *testing.T) {
	for _, strategy := range []membership.Strategy{membership.KeepMajority, membership.LeaseMajority} {
		cfg := membership.DefaultConfig()
		cfg.SplitBrainResolver.ActiveStrategy = strategy
		cfg.SplitBrainResolver.StableAfter = 5 * time.Second
		tc := testType("counter", 1)
		rep, err := RunCapacity(CapacityOptions{Members: 20, Membership: cfg, Type: &tc, Shards: 100, Measure: 10 * time.Second,
			Kill: 1, Partition: 5, Pause: 20 * time.Second, Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		k, p, pa := rep.Kill, rep.Partition, rep.Pause
		switch {
		case rep.ConvergedS <= 0 || rep.MembershipMsgsPerMemberPerS < 10 || rep.MembershipBytesPerMemberPerS < 60*rep.MembershipMsgsPerMemberPerS:
			t.Errorf("%s: converged %v s, %v messages and %v bytes per member and second", strategy, rep.ConvergedS, rep.MembershipMsgsPerMemberPerS, rep.MembershipBytesPerMemberPerS)
		case k.RemovedS > k.BoundS || k.RemovedS < k.DetectedS+5 || k.FailoverS < k.RemovedS || *rep.RemovedAfterKillS != k.RemovedS:
			t.Errorf("%s: kill %+v", strategy, *k)
		case p.Kept != 14 && p.Kept != 5:
			t.Errorf("%s: %d members run after cutting 5 from 14", strategy, p.Kept)
		case !pa.Removed || !strings.HasPrefix(pa.Outcome, "stopped"):
			t.Errorf("%s: pause %+v", strategy, *pa)
		}
		t.Logf("%s: kill %+v, partition %+v, pause %+v", strategy, *k, *p, *pa)
	}
}

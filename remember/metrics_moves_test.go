package remember

import (
	"fmt"
	"slices"
	"testing"
)

// TestMoveCounters: with max-simultaneous-moves 1, the moves of two shards whose common
// replica lost the type's role run one at a time, and the counters and the load say so:
// two started, two finished, none running or queued once done.
func TestMoveCounters(t *testing.T) {
	c := unitCluster(t, 5, func(cfg *Config) { cfg.MaxMoves = 1 })
	ctx := testContext(t)
	c.setRoles(map[int]bool{})
	// Two shards whose sets share a member other than the host.
	var units []Unit
	var shared int
	for s := 0; len(units) < 2 && s < 100; s++ {
		u := Unit{Type: "t", Shard: fmt.Sprint(s)}
		set := c.placement().Target(u, c.id(0))
		if len(units) == 0 {
			units = append(units, u)
			shared = slices.IndexFunc(c.members, func(id NodeID) bool { return id == set[1] })
			continue
		}
		if slices.Contains(set, c.id(shared)) {
			units = append(units, u)
		}
	}
	for _, u := range units {
		c.stores[0].Host(u, 1)
		if err := c.stores[0].Write(ctx, Write{Key: "u/" + u.Shard + "/e", Value: []byte("v"), Epoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c.setRoles(map[int]bool{shared: true})
	most := 0
	waitFor(t, "both moves", func() bool {
		l := c.stores[0].MoveLoad()
		most = max(most, l.Running)
		st := c.stores[0].Stats()
		return st.Moves == 2 && l.Running == 0 && l.Queued == 0
	})
	if most > 1 {
		t.Errorf("%d moves ran at once with max-simultaneous-moves 1", most)
	}
	st, l := c.stores[0].Stats(), c.stores[0].MoveLoad()
	if st.MovesStarted < 2 || st.Abandoned != 0 || l.MaxMoves != 1 {
		t.Errorf("stats %+v, load %+v", st, l)
	}
}

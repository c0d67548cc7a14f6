package remember

import (
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// TestOwnCallsAnsweredAtOnce: the machine's own calls — a unit's configuration read before
// a call on the unit, the refill's scan of the configurations — on the only voter of the
// metadata group, whose reads the group answers at once (inside the call): each gets its
// answer. Runtime soak seed 37: after a full-cluster restart the group's only voter never
// learned its shards' replica sets, and their increments waited for ever.
func TestOwnCallsAnsweredAtOnce(t *testing.T) {
	disk := NewMemDisk()
	m, err := NewMachine(MachineConfig{Self: "a", Layout: testLayout{}, Timeout: time.Second, AntiEntropyInterval: -1,
		MetaStorage: metaraft.NewMemStorage()}, disk.State(testLayout{}), t0)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	answered := map[CallID]Answer{}
	// run hands the machine its disk operations and ticks it until cond holds (10 s of
	// virtual time at most). It has no peers: its frames go nowhere.
	run := func(what string, cond func() bool) {
		t.Helper()
		for end := now.Add(10 * time.Second); !cond(); {
			rd := m.Ready()
			for _, a := range rd.Answers {
				answered[a.Call] = a
			}
			for _, op := range rd.Disk {
				m.DiskDone(now, disk.Do(op))
			}
			if len(rd.Disk) > 0 || len(rd.Answers) > 0 {
				continue
			}
			next := m.NextDeadline()
			if next.IsZero() || next.After(end) {
				t.Fatalf("%s: not within 10 s (%v)", what, now.Sub(t0))
			}
			now = next
			m.Tick(now)
		}
	}
	m.SetPlacement(now, NewPlacement([]PlacedMember{{ID: "a", Age: 1}}, 3, 0, nil))
	run("the group of one elects its voter", func() bool { return m.MetaStatus().Leader == "a" })

	// A read of a unit this member does not host reads the unit's configuration first.
	get := m.Get(now, "u/1/k", 0)
	run("the read of a unit answered", func() bool { _, ok := answered[get]; return ok })
	if a := answered[get]; a.Err != nil || a.Found {
		t.Fatalf("the read of a unit never written: %+v", a)
	}

	// A refill reads which units name this member: none, so it ends.
	m.StartRefill(now, "test")
	run("the refill ended", func() bool { return !m.Refill().Active })
}

package remember

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shardmesh/shardmesh/remember/metaraft"
)

// TestStoreTrafficPerMember: the store traffic of one member must not grow with the
// cluster at a fixed load per member (issue 19's target: 10 → 100 members with 10,000
// shards, per-member traffic up by at most 1.3×). The real store machines run on a
// deterministic network with a virtual clock: every member hosts its share of the shards
// (as the coordinator spreads them), writes the same number of entity states per second
// to them, and runs anti-entropy. After a warm-up (the shards' replica sets are placed),
// the bytes each member sends and receives are counted over a minute of virtual time.
//
// It takes a while (the machines are real, every round of them): -short skips it;
// scripts/test runs 10 → 40 members with 2,000 shards; SHARDMESH_TRAFFIC_FULL=1 runs the
// issue's 10 → 100 with 10,000 (docs/replica-sets.md has its figures).
func TestStoreTrafficPerMember(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real store machines at 10 and 40 members; run without -short")
	}
	small, large, shards := 10, 40, 2_000
	if os.Getenv("SHARDMESH_TRAFFIC_FULL") != "" {
		large, shards = 100, 10_000
	}
	const writesPerMemberPerSecond = 50
	a := runTraffic(t, small, shards, writesPerMemberPerSecond)
	b := runTraffic(t, large, shards, writesPerMemberPerSecond)
	t.Logf("%d members: %s", small, a)
	t.Logf("%d members: %s", large, b)
	median, worst := b.median/a.median, b.max/a.max
	t.Logf("per-member store traffic %d → %d members (%d shards, %d writes/s per member): median ×%.2f, busiest member ×%.2f",
		small, large, shards, writesPerMemberPerSecond, median, worst)
	if median > 1.3 || worst > 1.3 {
		t.Errorf("per-member store traffic grew by median ×%.2f, busiest ×%.2f from %d to %d members; want at most ×1.3", median, worst, small, large)
	}
}

// trafficFigures are bytes per second sent plus received by the members.
type trafficFigures struct{ median, max, writesAcked, writesFailed float64 }

func (f trafficFigures) String() string {
	return fmt.Sprintf("median %.0f B/s, busiest %.0f B/s per member; %.0f writes acknowledged, %.0f failed",
		f.median, f.max, f.writesAcked, f.writesFailed)
}

// trafficEvent is something that happens at a virtual time: a frame arrives, a machine's
// deadline, a member's next write.
type trafficEvent struct {
	at  time.Time
	seq uint64
	do  func()
}

type trafficQueue []trafficEvent

func (q trafficQueue) Len() int { return len(q) }
func (q trafficQueue) Less(i, j int) bool {
	return q[i].at.Before(q[j].at) || (q[i].at.Equal(q[j].at) && q[i].seq < q[j].seq)
}
func (q trafficQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *trafficQueue) Push(x any)   { *q = append(*q, x.(trafficEvent)) }
func (q *trafficQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// trafficCall is a call of a member's machine.
type trafficCall struct {
	member int
	call   CallID
}

// trafficNet runs n members' machines on a network that delivers every frame after 1 ms,
// with disks that answer at once.
type trafficNet struct {
	t        testing.TB
	now      time.Time
	seq      uint64
	q        trafficQueue
	ids      []NodeID
	idx      map[NodeID]int
	ms       []*Machine
	disks    []*MemDisk
	wakes    []time.Time
	bytes    []float64 // sent plus received, per member, while counting
	counting bool
	acked    float64
	failed   float64
	writes   map[trafficCall]bool // in flight
}

func (n *trafficNet) at(d time.Duration, do func()) {
	n.seq++
	heap.Push(&n.q, trafficEvent{at: n.now.Add(d), seq: n.seq, do: do})
}

// drain carries out what member i's machine asks for.
func (n *trafficNet) drain(i int) {
	m := n.ms[i]
	for {
		rd := m.Ready()
		if rd.Empty() {
			break
		}
		for _, s := range rd.Sends {
			to, frame := n.idx[s.To], s.Frame
			if n.counting {
				n.bytes[i] += float64(len(frame))
				n.bytes[to] += float64(len(frame))
			}
			from := n.ids[i]
			n.at(time.Millisecond, func() {
				if err := n.ms[to].Receive(n.now, from, frame); err != nil {
					n.t.Fatalf("%s: %v", n.ids[to], err)
				}
				n.drain(to)
			})
		}
		for _, op := range rd.Disk {
			m.DiskDone(n.now, n.disks[i].Do(op))
		}
		for _, a := range rd.Answers {
			if !n.writes[trafficCall{i, a.Call}] {
				continue
			}
			delete(n.writes, trafficCall{i, a.Call})
			switch {
			case !n.counting:
			case a.Err == nil:
				n.acked++
			default:
				n.failed++
			}
		}
	}
	if next := m.NextDeadline(); !next.IsZero() && (n.wakes[i].IsZero() || next.Before(n.wakes[i])) {
		n.wakes[i] = next
		n.at(max(next.Sub(n.now), 0), func() {
			if n.wakes[i].Equal(next) {
				n.wakes[i] = time.Time{}
			}
			m.Tick(n.now)
			n.drain(i)
		})
	}
}

// run advances virtual time by d.
func (n *trafficNet) run(d time.Duration) {
	end := n.now.Add(d)
	for n.q.Len() > 0 && !n.q[0].at.After(end) {
		e := heap.Pop(&n.q).(trafficEvent)
		n.now = e.at
		e.do()
	}
	n.now = end
}

func runTraffic(t *testing.T, members, shards, writesPerSecond int) trafficFigures {
	t.Helper()
	n := &trafficNet{t: t, now: time.Unix(1_700_000_000, 0), idx: map[NodeID]int{}, writes: map[trafficCall]bool{}}
	placed := make([]PlacedMember, members)
	for i := range members {
		id := NodeID(fmt.Sprintf("m%03d", i))
		n.ids = append(n.ids, id)
		n.idx[id] = i
		placed[i] = PlacedMember{ID: id, Age: uint64(i + 1), Voter: i < DefaultMetadataReplicas}
	}
	place := NewPlacement(placed, DefaultReplicationFactor, DefaultMetadataReplicas, nil)
	n.bytes, n.wakes = make([]float64, members), make([]time.Time, members)
	for i, id := range n.ids {
		d := NewMemDisk()
		// Each member keeps its replica of the metadata group (the voters' is the group's).
		m, err := NewMachine(MachineConfig{Self: id, Layout: testLayout{}, Seed: uint64(i + 1), MetaStorage: metaraft.NewMemStorage()}, d.State(testLayout{}), n.now)
		if err != nil {
			t.Fatal(err)
		}
		n.ms, n.disks = append(n.ms, m), append(n.disks, d)
		m.SetPlacement(n.now, place)
	}
	// Shards spread evenly, as the coordinator's least-shard allocation does.
	hosted := make([][]string, members)
	for s := range shards {
		home := s % members
		shard := strconv.Itoa(s)
		hosted[home] = append(hosted[home], shard)
		n.ms[home].Host(n.now, Unit{Type: "t", Shard: shard}, 1)
	}
	for i := range members {
		n.drain(i)
	}
	// Each member writes writesPerSecond entity states, to its shards' entities in turn.
	rng := rand.New(rand.NewPCG(uint64(members), uint64(shards)))
	value := make([]byte, 100)
	for i := range members {
		var write func()
		write = func() {
			shard := hosted[i][rng.IntN(len(hosted[i]))]
			key := "u/" + shard + "/e" + strconv.Itoa(rng.IntN(10))
			call := n.ms[i].Write(n.now, []Write{{Key: key, Value: value, Epoch: 1}})
			n.writes[trafficCall{i, call}] = true
			n.drain(i)
			n.at(time.Second/time.Duration(writesPerSecond), write)
		}
		n.at(time.Duration(rng.IntN(1000))*time.Millisecond, write)
	}
	n.run(30 * time.Second) // the replica sets placed, the first rounds of anti-entropy
	for i, m := range n.ms {
		known := 0
		for _, u := range m.Units() {
			if u.Known && !u.Moving {
				known++
			}
		}
		if known != len(hosted[i]) {
			t.Fatalf("%s: %d of its %d shards have their replica set after the warm-up", n.ids[i], known, len(hosted[i]))
		}
	}
	n.counting = true
	const window = time.Minute
	n.run(window)
	per := make([]float64, members)
	for i, b := range n.bytes {
		per[i] = b / window.Seconds()
	}
	slices.Sort(per)
	if n.failed > 0 {
		t.Errorf("%d members: %.0f of %.0f writes failed", members, n.failed, n.failed+n.acked)
	}
	return trafficFigures{median: per[members/2], max: per[members-1], writesAcked: n.acked, writesFailed: n.failed}
}

package remember

import (
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"

	"github.com/shardmesh/shardmesh/remember/metaraft"
	"github.com/shardmesh/shardmesh/wire"
	"github.com/shardmesh/shardmesh/wire/pb"
)

// groupNet runs machines of the metadata group on memory disks: frames delivered at once,
// in order; time moves to the next deadline when nothing else happens.
type groupNet struct {
	t     *testing.T
	now   time.Time
	nodes map[NodeID]*groupNode
	sent  func(from, to NodeID, env *pb.ReplicaEnvelope) // sees every frame sent (nil: none)
}

type groupNode struct {
	m    *Machine
	disk *MemDisk
	meta *metaraft.MemStorage
	st   metaraft.Storage // the machine's storage of the group: meta, or a wrapper of it
}

// open starts member id's machine on its disks (new ones the first time) with placement p.
func (n *groupNet) open(id NodeID, p *Placement) *Machine {
	n.t.Helper()
	g := n.nodes[id]
	returning := g != nil
	if g == nil {
		g = &groupNode{disk: NewMemDisk(), meta: metaraft.NewMemStorage()}
		n.nodes[id] = g
	}
	st := g.st
	if st == nil {
		st = g.meta
	}
	m, err := NewMachine(MachineConfig{Self: id, Layout: testLayout{}, Timeout: time.Second, AntiEntropyInterval: -1,
		MetaStorage: st, Returning: returning}, g.disk.State(testLayout{}), n.now)
	if err != nil {
		n.t.Fatal(err)
	}
	g.m = m
	m.SetPlacement(n.now, p)
	return m
}

// run delivers frames and disk operations and ticks the machines of ticked until cond
// holds (30 s of virtual time at most). A machine that asks to be ticked again at once,
// over and over, fails it: a driver would spin and a simulation's time stand still.
func (n *groupNet) run(what string, cond func() bool, ticked ...NodeID) {
	n.t.Helper()
	same := 0
	for end := n.now.Add(30 * time.Second); !cond(); {
		busy := false
		for _, id := range slices.Sorted(maps.Keys(n.nodes)) {
			g := n.nodes[id]
			rd := g.m.Ready()
			for _, op := range rd.Disk {
				g.m.DiskDone(n.now, g.disk.Do(op))
			}
			for _, s := range rd.Sends {
				if n.sent != nil {
					env, err := wire.DecodeReplica(s.Frame)
					if err != nil {
						n.t.Fatal(err)
					}
					n.sent(id, s.To, env)
				}
				if to := n.nodes[s.To]; to != nil {
					if err := to.m.Receive(n.now, id, s.Frame); err != nil {
						n.t.Fatal(err)
					}
				}
			}
			busy = busy || !rd.Empty()
		}
		if busy {
			continue
		}
		var next time.Time
		for _, id := range ticked {
			if d := n.nodes[id].m.NextDeadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
		if next.IsZero() || next.After(end) {
			n.t.Fatalf("%s: not within 30 s", what)
		}
		if same++; next.After(n.now) {
			n.now, same = next, 0
		} else if same > 100 {
			n.t.Fatalf("%s: the machines ask to be ticked again at once, for ever (at %v)", what, n.now.Sub(t0))
		}
		for _, id := range ticked {
			n.nodes[id].m.Tick(n.now)
		}
	}
}

// placed returns the placement of ids, oldest first: every one a voter of the metadata.
func placed(ids ...NodeID) *Placement {
	var ms []PlacedMember
	for i, id := range ids {
		ms = append(ms, PlacedMember{ID: id, Age: uint64(i + 1)})
	}
	return NewPlacement(ms, 3, 0, nil)
}

// fullStorage is a storage of the group whose disk may be full: Save fails while full.
type fullStorage struct {
	*metaraft.MemStorage
	full bool
}

func (s *fullStorage) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot) error {
	if s.full {
		return syscall.ENOSPC
	}
	return s.MemStorage.Save(hs, ents, snap)
}

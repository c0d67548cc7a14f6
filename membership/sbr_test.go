package membership

import "testing"

func TestDecide(t *testing.T) {
	members := map[NodeID]*Member{}
	for i, id := range []NodeID{"a", "b", "c", "d", "e"} {
		members[id] = &Member{Node: id, Status: Up, UpNumber: uint64(5 - i)} // e is oldest
	}
	majority := SBRConfig{ActiveStrategy: KeepMajority}
	quorum3 := SBRConfig{ActiveStrategy: StaticQuorum, QuorumSize: 3}
	oldest := SBRConfig{ActiveStrategy: KeepOldest, DownIfAlone: true}
	cases := []struct {
		name         string
		cfg          SBRConfig
		side, others []NodeID
		win          bool
	}{
		{"majority 3/2", majority, []NodeID{"a", "b", "c"}, []NodeID{"d", "e"}, true},
		{"minority 2/3", majority, []NodeID{"d", "e"}, []NodeID{"a", "b", "c"}, false},
		{"tie, lowest id here", majority, []NodeID{"a", "b"}, []NodeID{"c", "d"}, true},
		{"tie, lowest id there", majority, []NodeID{"c", "d"}, []NodeID{"a", "b"}, false},
		{"quorum reached", quorum3, []NodeID{"a", "b", "c"}, []NodeID{"d", "e"}, true},
		{"quorum missed", quorum3, []NodeID{"a", "b"}, []NodeID{"c", "d", "e"}, false},
		{"oldest here", oldest, []NodeID{"d", "e"}, []NodeID{"a", "b", "c"}, true},
		{"oldest there", oldest, []NodeID{"a", "b", "c"}, []NodeID{"d", "e"}, false},
		{"oldest alone here", oldest, []NodeID{"e"}, []NodeID{"a", "b", "c", "d"}, false},
		{"oldest alone there", oldest, []NodeID{"a", "b", "c", "d"}, []NodeID{"e"}, true},
	}
	for _, c := range cases {
		win, why := decide(c.cfg, c.side, c.others, members)
		if win != c.win {
			t.Errorf("%s: win = %v (%s), want %v", c.name, win, why, c.win)
		}
	}
	// static-quorum with more than 2*quorum-1 members cannot decide safely: both lose.
	six := map[NodeID]*Member{}
	for _, id := range []NodeID{"a", "b", "c", "d", "e", "f"} {
		six[id] = &Member{Node: id, Status: Up}
	}
	if win, _ := decide(quorum3, []NodeID{"a", "b", "c"}, []NodeID{"d", "e", "f"}, six); win {
		t.Error("static-quorum 3 with 6 members let a side survive")
	}
}

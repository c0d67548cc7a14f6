package membership

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The decision cases of Akka's SplitBrainResolverSpec (akka-cluster, sbr), one row per
// assertion, against partitionView (downing.go). Every row matches Akka, or names the
// deliberate difference and why (akkaDifferences below, and the README's split-brain
// section).
//
// The spec's members (TestAddresses.scala): node ids a..g, up-numbers A 5, B 4, C 3, D 2,
// E 1 (the oldest), F 5, G 6, and roles A role3; B role1, role3; C role2; D role1, role2,
// role3; E, F, G none.
var akkaMembers = map[string]struct {
	up    uint64
	roles []string
}{
	"a": {5, []string{"role3"}},
	"b": {4, []string{"role1", "role3"}},
	"c": {3, []string{"role2"}},
	"d": {2, []string{"role1", "role2", "role3"}},
	"e": {1, nil},
	"f": {5, nil},
	"g": {6, nil},
}

// akkaMember parses "A", "Aj" (joining), "Aw" (weakly up), "Al" (leaving), "Ae" (exiting),
// "Ad" (downed).
func akkaMember(spec string) *Member {
	id := strings.ToLower(spec[:1])
	def, ok := akkaMembers[id]
	if !ok {
		panic("unknown spec member " + spec)
	}
	m := &Member{Node: NodeID(id), Status: Up, UpNumber: def.up, Roles: def.roles, Voter: true}
	if len(spec) > 1 {
		switch spec[1:] {
		case "j":
			m.Status, m.UpNumber, m.Voter = Joining, 0, false
		case "w":
			m.Status, m.UpNumber, m.Voter = WeaklyUp, 0, false
		case "l":
			m.Status = Leaving
		case "e":
			m.Status = Exiting
		case "d":
			m.Status = Down
		default:
			panic("unknown status in " + spec)
		}
	}
	return m
}

// akkaView builds what the spec's StrategySetup.strategy(side) builds: every member of
// every side; the first member of the deciding side observes every member of the other
// sides unreachable, plus the indirectly-connected observations ("A>B,B>A"); every member
// of the deciding side has seen the view.
//
// Every member that has been Up votes (Akka counts every member), and every Joining member is
// a possible voter.
func akkaView(cfg SBRConfig, sides []string, from int, indirect string) *partitionView {
	p := &partitionView{cfg: cfg, members: map[NodeID]*Member{}, unreachable: map[NodeID]bool{}, seen: map[NodeID]bool{}, possible: map[NodeID]bool{}}
	defer func() {
		v := newView()
		for _, m := range p.members {
			v.put(m)
		}
		for _, m := range v.possiblePromotions(Config{Voters: len(p.members), SplitBrainResolver: cfg}) {
			p.possible[m.Node] = true
		}
	}()
	var parsed [][]*Member
	for _, side := range sides {
		var ms []*Member
		for _, spec := range strings.FieldsFunc(side, func(r rune) bool { return r == ',' }) {
			m := akkaMember(spec)
			p.members[m.Node] = m
			ms = append(ms, m)
		}
		parsed = append(parsed, ms)
	}
	add := func(o, s NodeID) {
		r := reachRecord{observer: o, subject: s}
		if !slices.Contains(p.records, r) {
			p.records = append(p.records, r)
		}
		p.unreachable[s] = true
	}
	for _, pair := range strings.FieldsFunc(indirect, func(r rune) bool { return r == ',' }) {
		o, s, _ := strings.Cut(strings.ToLower(pair), ">")
		add(NodeID(o), NodeID(s))
	}
	if mine := parsed[from]; len(mine) > 0 {
		for i, others := range parsed {
			if i == from {
				continue
			}
			for _, o := range others {
				add(mine[0].Node, o.Node)
			}
		}
		for _, m := range mine {
			p.seen[m.Node] = true
		}
	}
	return p
}

type akkaRow struct {
	test     string    // Akka's test name
	cfg      SBRConfig // strategy
	sides    []string  // "A,C,E", "B,D"
	indirect string    // "A>B,B>A"
	from     int       // the deciding side
	decision Decision  // 0: not asserted
	down     string    // the members downed, "A,B" ("-": none; "": not asserted)
}

func majority(role string) SBRConfig { return SBRConfig{ActiveStrategy: KeepMajority, Role: role} }
func quorum(q int, role string) SBRConfig {
	return SBRConfig{ActiveStrategy: StaticQuorum, QuorumSize: q, Role: role}
}
func oldest(alone bool, role string) SBRConfig {
	return SBRConfig{ActiveStrategy: KeepOldest, DownIfAlone: alone, Role: role}
}

var downAll = SBRConfig{ActiveStrategy: DownAllNodes}

// rows expands Akka's assertDowning (every non-empty side downs the same members).
func rows(test string, cfg SBRConfig, sides []string, indirect, down string) []akkaRow {
	var out []akkaRow
	for i, s := range sides {
		if s != "" {
			out = append(out, akkaRow{test: test, cfg: cfg, sides: sides, indirect: indirect, from: i, down: down})
		}
	}
	return out
}

func side(test string, cfg SBRConfig, sides []string, indirect string, from int, d Decision, down string) akkaRow {
	return akkaRow{test: test, cfg: cfg, sides: sides, indirect: indirect, from: from, decision: d, down: down}
}

func akkaRows() []akkaRow {
	s := func(sides ...string) []string { return sides }
	var r []akkaRow
	add := func(rs ...akkaRow) { r = append(r, rs...) }

	// StaticQuorum
	add(rows("static: down unreachable when enough reachable nodes", quorum(3, ""), s("A,C,E", "B,D"), "", "B,D")...)
	add(side("static: down reachable when not enough reachable nodes", quorum(3, ""), s("A,B", "C,D"), "", 0, DownReachable, ""),
		side("static: down reachable when not enough reachable nodes", quorum(3, ""), s("A,B", "C,D"), "", 1, DownReachable, ""))
	add(rows("static: down unreachable when enough reachable nodes with role", quorum(2, "role3"), s("A,B,C", "D,E"), "", "D,E")...)
	add(rows("static: down all if N > static-quorum.size * 2 - 1", quorum(3, ""), s("A,B,C", "D,E,F"), "", "A,B,C,D,E,F")...)
	const sj = "static: handle joining"
	add(side(sj, quorum(3, ""), s("A,B,Cj", "D,E,Fj"), "", 0, DownReachable, ""),
		side(sj, quorum(3, ""), s("A,B,Cj", "D,E,Fj"), "", 1, DownReachable, ""),
		side(sj+" (C Up)", quorum(3, ""), s("A,B,C", "D,E,Fj"), "", 0, DownUnreachable, ""),
		side(sj+" (C Up)", quorum(3, ""), s("A,B,C", "D,E,Fj"), "", 1, DownReachable, ""),
		side(sj+" (F Up)", quorum(3, ""), s("A,B,Cj", "D,E,F"), "", 0, DownReachable, ""),
		side(sj+" (F Up)", quorum(3, ""), s("A,B,Cj", "D,E,F"), "", 1, DownUnreachable, ""),
		side(sj+" (both Up)", quorum(3, ""), s("A,B,C", "D,E,F"), "", 0, DownAll, ""),
		side(sj+" (both Up)", quorum(3, ""), s("A,B,C", "D,E,F"), "", 1, DownAll, ""))
	const sl = "static: handle leaving/exiting"
	add(side(sl, quorum(3, ""), s("A,B,Cl", "D,E"), "", 0, DownUnreachable, ""),
		side(sl, quorum(3, ""), s("A,B,Cl", "D,E"), "", 1, DownReachable, ""),
		side(sl+" (C Exiting)", quorum(3, ""), s("A,B,Ce", "D,E"), "", 0, DownReachable, ""),
		side(sl+" (C Exiting)", quorum(3, ""), s("A,B,Ce", "D,E"), "", 1, DownReachable, ""))

	// KeepMajority
	m := majority("")
	add(rows("majority: {A, C, E} | {B, D} => {A, C, E}", m, s("A,C,E", "B,D"), "", "B,D")...)
	add(rows("majority: {A, B} | {C, D, E} => {C, D, E}", m, s("A,B", "C,D,E"), "", "A,B")...)
	add(rows("majority: down self when alone: {B} | {A, C} => {A, C}", m, s("B", "A,C"), "", "B")...)
	add(rows("majority: keep half with lowest address: {A, B} | {C, D} => {A, B}", m, s("A,B", "C,D"), "", "C,D")...)
	add(rows("majority: keep lowest address in two node cluster: {A} | {B} => {A}", m, s("A", "B"), "", "B")...)
	add(rows("majority: with role: {A*, B*} | {C, D*, E} => {A*, B*}", majority("role3"), s("A,B", "C,D,E"), "", "C,D,E")...)
	add(rows("majority: half with lowest address with role: {A, D*, E} | {B, C*} => {B, C*}", majority("role2"), s("A,D,E", "B,C"), "", "A,D,E")...)
	add(rows("majority: down all when no node with role: {C} | {E} => {}", majority("role3"), s("C", "E"), "", "C,E")...)
	add(rows("majority: not count joining node, but down it: {B, D} | {Aj, C} => {B, D}", m, s("B,D", "Aj,C"), "", "A,C")...)
	add(rows("majority: down minority partition and joining node: {A, Bj} | {C, D, E} => {C, D, E}", m, s("A,Bj", "C,D,E"), "", "A,B")...)
	const three = "majority: split in 3 too small parts: {A, B} | {C, D} | {E} => {}"
	add(side(three, m, s("A,B", "C,D", "E"), "", 0, 0, "A,B"),
		side(three, m, s("A,B", "C,D", "E"), "", 1, 0, "C,D"),
		side(three, m, s("A,B", "C,D", "E"), "", 2, 0, "E"))
	const edge = "majority: edge case of membership change: {A, B, F', G'} | {C, D, E} => {A, B, F, G}"
	add(side(edge, m, s("A,B,F,G", "C,D,E"), "", 0, DownUnreachable, "C,D,E"),
		side(edge, m, s("A,B,Fj,Gj", "C,D,E"), "", 1, DownAll, "A,B,C,D,E,F,G"))
	const edgeEq = "majority: edge case of membership change when equal size: {A, B, F'} | {C, D, E} => {A, B, F}"
	add(side(edgeEq, m, s("A,B,F", "C,D,E"), "", 0, DownUnreachable, "C,D,E"),
		side(edgeEq, m, s("A,B,Fj", "C,D,E"), "", 1, DownAll, "A,B,C,D,E,F"))
	const safeEdge = "majority: safe edge case of membership change: {A, B} | {C, D, E, F'} => {C, D, E, F}"
	add(side(safeEdge, m, s("A,B", "C,D,E,Fj"), "", 0, DownReachable, "A,B"),
		side(safeEdge, m, s("A,B", "C,D,E,F"), "", 1, DownUnreachable, "A,B"))
	const leaveEdge = "majority: edge case of leaving/exiting membership change: {A', B} | {C, D} => {C, D}"
	add(side(leaveEdge, m, s("Al,B,Ej", "C,D"), "", 0, DownAll, "A,B,C,D,E"),
		side(leaveEdge, m, s("Ae,B", "C,D"), "", 1, DownUnreachable, "B"))
	add(rows("majority: down indirectly connected: {(A, B)} => {}", m, s("A,B"), "A>B,B>A", "A,B")...)
	add(rows("majority: down indirectly connected: {(A, B), C} => {C}", m, s("A,B,C"), "A>B,B>A", "A,B")...)
	add(rows("majority: down indirectly connected: {(A, B, C)} => {}", m, s("A,B,C"), "A>B,B>C,C>A", "A,B,C")...)
	add(rows("majority: down indirectly connected: {(A, B, C, D)} => {}", m, s("A,B,C,D"), "A>D,D>A,B>C,C>B", "A,B,C,D")...)
	add(rows("majority: down indirectly connected: {(A, B, C), D, E} => {D, E}", m, s("A,B,C,D,E"), "A>B,B>C,C>A", "A,B,C")...)
	add(rows("majority: down indirectly connected {A, (B, C), D, (E, F), G} => {A, D, G}", m, s("A,B,C,D,E,F,G"), "B>C,C>B,E>F,F>E", "B,C,E,F")...)
	add(rows("majority: down indirectly connected, detected via seen: {(A, B, C)} => {}", m, s("A,B,C"), "A>B,A>C", "A,B,C")...)
	add(rows("majority: down indirectly connected, detected via seen: {(A, B, C, D), E} => {E}", m, s("A,B,C,D,E"), "B>C,C>B,A>D", "A,B,C,D")...)
	add(side("majority: indirectly connected combined with crashed: {(A, B), D, E} | {C} => {D, E}", m, s("A,B,D,E", "C"), "A>B,B>A", 0, 0, "A,B,C"))
	const clean = "majority: indirectly connected combined with clean partition: {A, (B, C)} | {D, E} => {A}"
	add(side(clean, m, s("A,B,C", "D,E"), "B>C,C>B", 0, 0, "B,C,D,E"),
		side(clean+" (not seen from side 2)", m, s("A,B,C", "D,E"), "", 1, 0, "D,E"),
		side(clean+" (seen from side 2)", m, s("A,B,C", "D,E"), "B>C,C>B", 1, 0, "B,C,D,E"))
	const minority = "majority: indirectly connected on minority side with clean partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}"
	add(side(minority, m, s("A,B,C", "D,E,F,G"), "B>C,C>B", 0, 0, "A,B,C"),
		side(minority+" (not seen from side 2)", m, s("A,B,C", "D,E,F,G"), "", 1, 0, "A,B,C"),
		side(minority+" (seen from side 2)", m, s("A,B,C", "D,E,F,G"), "B>C,C>B", 1, 0, "A,B,C"))
	const majoritySide = "majority: indirectly connected on majority side with clean partition: {A, B, C} | {(D, E), F, G} => {F, G}"
	add(side(majoritySide+" (not seen from side 1)", m, s("A,B,C", "D,E,F,G"), "", 0, 0, "A,B,C"),
		side(majoritySide+" (seen from side 1)", m, s("A,B,C", "D,E,F,G"), "D>E,E>D", 0, 0, "A,B,C,D,E"),
		side(majoritySide, m, s("A,B,C", "D,E,F,G"), "D>E,E>D", 1, 0, "A,B,C,D,E"))
	const spanning = "majority: indirectly connected spanning a clean partition: {A, (B), C} | {D, (E, F), G} => {D, G}"
	add(side(spanning, m, s("A,B,C", "D,E,F,G"), "B>E,E>F,F>B", 0, 0, "A,B,C,E,F"),
		side(spanning, m, s("A,B,C", "D,E,F,G"), "B>E,E>F,F>B", 1, 0, "A,B,C,E,F"))
	const viaSeen = "majority: indirectly connected via seen with clean partition: {A, B, C} | {(D, E), (F, G)} => {}"
	add(side(viaSeen, m, s("A,B,C", "D,E,F,G"), "", 0, 0, "A,B,C"),
		side(viaSeen, m, s("A,B,C", "D,E,F,G"), "D>E,G>F", 1, 0, "A,B,C,D,E,F,G"))
	// Akka throws IllegalStateException from nodesToDown here, which its resolver turns
	// into DownAll; nodesToDown returns the DownAll set and decision directly.
	const double = "majority: double DownIndirectlyConnected before clean partition: {A, B, C} | {(D, E), (F, G)} => {}"
	add(side(double, m, s("A,B,C", "D,E,F,G"), "D>E,G>F", 0, DownAll, "A,B,C,D,E,F,G"),
		side(double, m, s("A,B,C", "D,E,F,G"), "D>E,G>F", 1, 0, "A,B,C,D,E,F,G"))

	// KeepOldest
	o := oldest(true, "")
	add(rows("oldest: keep partition with oldest", o, s("A,E", "B,C,D"), "", "B,C,D")...)
	add(rows("oldest: keep partition with oldest with role", oldest(true, "role2"), s("A,E", "B,C,D"), "", "A,E")...)
	add(rows("oldest: keep partition with oldest unless alone", o, s("E", "A,B,C,D"), "", "E")...)
	add(rows("oldest: keep partition with oldest in two nodes cluster", o, s("B", "A"), "", "A")...)
	add(rows("oldest: keep one single oldest", o, s("", "A"), "", "-")...)
	add(rows("oldest: keep oldest even when alone when downIfAlone = false", oldest(false, ""), s("E", "A,B,C,D"), "", "A,B,C,D")...)
	const ol1 = "oldest: leaving/exiting edge case, keep partition with oldest, scenario 1"
	add(side(ol1, o, s("A,B,D", "C,Ee"), "", 0, DownUnreachable, "C"),
		side(ol1, o, s("A,B,D", "C,El"), "", 1, DownAll, "A,B,C,D,E"))
	const ol2 = "oldest: leaving/exiting edge case, keep partition with oldest, scenario 2"
	add(side(ol2, o, s("A,El", "B,C,D"), "", 0, DownAll, ""),
		side(ol2, o, s("A,El", "B,C,D"), "", 1, DownReachable, ""))
	add(rows("oldest: leaving/exiting edge case, keep partition with oldest, scenario 3", o, s("A,E", "Bl,Cl,D"), "", "B,C,D")...)
	const oa1 = "oldest: leaving/exiting edge case, oldest unless alone, scenario 1"
	add(side(oa1, o, s("Dl,E", "A,B,C"), "", 0, DownAll, ""),
		side(oa1, o, s("Dl,E", "A,B,C"), "", 1, DownReachable, ""))
	const oa4 = "oldest: leaving/exiting edge case, oldest unless alone, scenario 4"
	add(side(oa4, o, s("E", "A,B,Cl"), "", 0, DownReachable, ""),
		side(oa4, o, s("E", "A,B,Cl"), "", 1, DownUnreachable, ""))
	const oa3 = "oldest: leaving/exiting edge case, oldest unless alone, scenario 3"
	add(side(oa3, o, s("E", "A,Bl,Cl,Dl"), "", 0, DownReachable, ""),
		side(oa3, o, s("E", "A,Bl,Cl,Dl"), "", 1, DownAll, ""))
	const both = "oldest: leaving/exiting edge case, DownReachable on both sides when the oldest leaving/exiting is alone"
	add(side(both, o, s("D,Ee", "A,B,C"), "", 0, DownReachable, ""),
		side(both, o, s("D,El", "A,B,C"), "", 1, DownReachable, ""))
	const single = "oldest: leaving/exiting edge case, one single oldest"
	add(side(single, o, s("A", "Be"), "", 0, DownUnreachable, ""),
		side(single, o, s("A", "Bl"), "", 1, DownAll, ""))
	const oj = "oldest: joining/up edge case, oldest unless alone, scenario 1"
	add(side(oj, o, s("Aj,E", "B,C,D"), "", 0, DownReachable, ""),
		side(oj, o, s("Aj,E", "B,C,D"), "", 1, DownAll, ""))
	const ojf = "oldest: joining/up edge case, keep oldest even when alone when downIfAlone = false"
	add(side(ojf, oldest(false, ""), s("Aj,E", "B,C,D"), "", 0, DownUnreachable, ""),
		side(ojf, oldest(false, ""), s("Aj,E", "B,C,D"), "", 1, DownReachable, ""))
	add(rows("oldest: down indirectly connected: {(A, B), C} => {C}", o, s("A,B,C"), "A>B,B>A", "A,B")...)
	const younger = "oldest: indirectly connected on younger side with clean partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}"
	add(side(younger, o, s("A,B,C", "D,E,F,G"), "B>C,C>B", 0, 0, "A,B,C"),
		side(younger+" (not seen from side 2)", o, s("A,B,C", "D,E,F,G"), "", 1, 0, "A,B,C"),
		side(younger+" (seen from side 2)", o, s("A,B,C", "D,E,F,G"), "B>C,C>B", 1, 0, "A,B,C"))
	const older = "oldest: indirectly connected on oldest side with clean partition: {A, B, C} | {(D, E), F, G} => {F, G}"
	add(side(older+" (not seen from side 1)", o, s("A,B,C", "D,E,F,G"), "", 0, 0, "A,B,C"),
		side(older+" (seen from side 1)", o, s("A,B,C", "D,E,F,G"), "D>E,E>D", 0, 0, "A,B,C,D,E"),
		side(older, o, s("A,B,C", "D,E,F,G"), "D>E,E>D", 1, 0, "A,B,C,D,E"))

	// DownAllNodes
	add(rows("down-all: down all", downAll, s("A,B,C", "D,E"), "", "A,B,C,D,E")...)
	add(rows("down-all: down all when any indirectly connected: {(A, B), C} => {}", downAll, s("A,B,C"), "A>B,B>A", "A,B,C")...)
	return r
}

func (r akkaRow) String() string {
	return fmt.Sprintf("%s [from side %d: %s]", r.test, r.from+1, strings.Join(r.sides, " | "))
}

func TestAkkaSplitBrainResolverSpec(t *testing.T) {
	all := akkaRows()
	for _, r := range all {
		p := akkaView(r.cfg, r.sides, r.from, r.indirect)
		d, why := p.decide()
		nodes, eff := p.nodesToDown(d)
		if r.decision != 0 && eff != r.decision {
			t.Errorf("%s: decision %s (%s), want %s", r, eff, why, r.decision)
		}
		if r.down == "" {
			continue
		}
		var want []NodeID
		if r.down != "-" {
			for _, x := range strings.Split(r.down, ",") {
				want = append(want, NodeID(strings.ToLower(x)))
			}
		}
		if !slices.Equal(nodes, want) {
			t.Errorf("%s: downs %v (%s: %s), want %v", r, nodes, eff, why, want)
		}
		// The same with the records indexed, as the machine reads them (Node.resolverView).
		x := *p
		x.byObserver, x.bySubject = map[NodeID][]NodeID{}, map[NodeID][]NodeID{}
		for _, rec := range x.records {
			x.byObserver[rec.observer] = append(x.byObserver[rec.observer], rec.subject)
			x.bySubject[rec.subject] = append(x.bySubject[rec.subject], rec.observer)
		}
		xd, _ := x.decide()
		if xnodes, xeff := x.nodesToDown(xd); xeff != eff || !slices.Equal(xnodes, nodes) {
			t.Errorf("%s: indexed, %s downs %v; not indexed, %s downs %v", r, xeff, xnodes, eff, nodes)
		}
	}
	t.Logf("%d rows of Akka's SplitBrainResolverSpec decisions", len(all))
}

// TestAkkaStrategyCollectAndFilter ports the spec's "collect and filter members" cases:
// which members each count takes (A WeaklyUp, C Joining). The deliberate difference: a Down
// member (F) counts, always on the other side (partitionView's doc).
func TestAkkaStrategyCollectAndFilter(t *testing.T) {
	for _, cfg := range []SBRConfig{majority(""), oldest(true, "")} {
		sides := []string{"Aw,B,Cj", "D,El,Fd,Ge"}
		for from, want := range []map[string]string{
			{"all": "B,D,E,F", "up": "A,B,C,D,E,F", "noexit": "B,D,F", "both": "A,B,C,D,F",
				"here": "B", "hereUp": "A,B,C", "hereNoexit": "B", "hereBoth": "A,B,C",
				"there": "D,E,F", "thereUp": "D,E,F", "thereNoexit": "D,F", "thereBoth": "D,F"},
			{"all": "B,D,E,F", "up": "A,B,C,D,E,F", "noexit": "B,D,F", "both": "A,B,C,D,F",
				"here": "D,E", "hereUp": "D,E", "hereNoexit": "D", "hereBoth": "D",
				"there": "B,F", "thereUp": "A,B,C,F", "thereNoexit": "B,F", "thereBoth": "A,B,C,F"},
		} {
			p := akkaView(cfg, sides, from, "")
			for key, args := range map[string][3]int{
				"all": {0, 0, 0}, "up": {1, 0, 0}, "noexit": {0, 1, 0}, "both": {1, 1, 0},
				"here": {0, 0, 1}, "hereUp": {1, 0, 1}, "hereNoexit": {0, 1, 1}, "hereBoth": {1, 1, 1},
				"there": {0, 0, -1}, "thereUp": {1, 0, -1}, "thereNoexit": {0, 1, -1}, "thereBoth": {1, 1, -1},
			} {
				var got []string
				for _, m := range p.withRole(args[0] == 1, args[1] == 1, args[2]) {
					got = append(got, strings.ToUpper(string(m.Node)))
				}
				slices.Sort(got)
				if strings.Join(got, ",") != want[key] {
					t.Errorf("%s from side %d, %s: %v, want %s", cfg.ActiveStrategy, from+1, key, got, want[key])
				}
			}
		}
	}
}

// The LeaseMajority cases of SplitBrainResolverSpec: the decision, the delay before asking for
// the lease (acquire-lease-delay-for-minority 2 s), the members downed with the lease, and the
// reverse decision and its members, downed without it.
func TestAkkaLeaseMajority(t *testing.T) {
	lease := func(role string) SBRConfig {
		return SBRConfig{ActiveStrategy: LeaseMajority, Role: role, LeaseMajority: LeaseMajorityConfig{AcquireLeaseDelayForMinority: 2 * time.Second}}
	}
	const delay = 2 * time.Second
	s := func(sides ...string) []string { return sides }
	for _, r := range []struct {
		test        string
		cfg         SBRConfig
		sides       []string
		indirect    string
		from        int
		decision    Decision
		delay       time.Duration
		down        string
		reverse     Decision
		reverseDown string
	}{
		{"decide AcquireLeaseAndDownUnreachable, and DownReachable as reverse decision", lease(""), s("A,C,E", "B,D"), "", 0,
			AcquireLeaseAndDownUnreachable, 0, "B,D", DownReachable, "A,C,E"},
		{"decide AcquireLeaseAndDownUnreachable, and DownReachable as reverse decision", lease(""), s("A,C,E", "B,D"), "", 1,
			AcquireLeaseAndDownUnreachable, delay, "A,C,E", DownReachable, "B,D"},
		{"try to keep half with lowest address when equal size partition", lease("role2"), s("A,D,E", "B,C"), "", 0,
			AcquireLeaseAndDownUnreachable, delay, "B,C", 0, ""},
		{"try to keep half with lowest address when equal size partition", lease("role2"), s("A,D,E", "B,C"), "", 1,
			AcquireLeaseAndDownUnreachable, 0, "A,D,E", 0, ""},
		{"down indirectly connected: {(A, B), C} => {C}", lease(""), s("A,B,C"), "A>B,B>A", 0,
			AcquireLeaseAndDownIndirectlyConnected, 0, "A,B", ReverseDownIndirectlyConnected, "A,B,C"},
		{"down indirectly connected when combined with clean partition: {A, (B, C)} | {D, E} => {A}", lease(""), s("A,B,C", "D,E"), "B>C,C>B", 0,
			AcquireLeaseAndDownIndirectlyConnected, 0, "B,C,D,E", ReverseDownIndirectlyConnected, "A,B,C"},
		{"down indirectly connected when combined with clean partition (side 2, not seen)", lease(""), s("A,B,C", "D,E"), "", 1,
			AcquireLeaseAndDownUnreachable, delay, "A,B,C", DownReachable, "D,E"},
		{"down indirectly connected when combined with clean partition (side 2, seen)", lease(""), s("A,B,C", "D,E"), "B>C,C>B", 1,
			AcquireLeaseAndDownIndirectlyConnected, 0, "A,B,C", ReverseDownIndirectlyConnected, "B,C,D,E"},
		{"down indirectly connected to already downed node during partition: {A, B, C, D} | {(E, F)} => {A, B, C, D}", lease(""), s("A,B,C,D", "El,Fd"), "E>F", 0,
			0, -1, "E", 0, ""},
		{"down indirectly connected to already downed node during partition: {A, B, C, D} | {(E, F)} => {A, B, C, D}", lease(""), s("A,B,C,D", "El,Fd"), "E>F", 1,
			0, -1, "A,B,C,D,E", 0, ""},
	} {
		name := fmt.Sprintf("%s [from side %d: %s]", r.test, r.from+1, strings.Join(r.sides, " | "))
		p := akkaView(r.cfg, r.sides, r.from, r.indirect)
		d, why := p.decide()
		if r.decision != 0 && d != r.decision {
			t.Errorf("%s: decision %s (%s), want %s", name, d, why, r.decision)
		}
		if got := p.acquireDelay(d); r.delay >= 0 && got != r.delay {
			t.Errorf("%s: acquire delay %v, want %v", name, got, r.delay)
		}
		check := func(d Decision, want string) {
			nodes, _ := p.nodesToDown(d)
			var ids []string
			for _, id := range nodes {
				ids = append(ids, strings.ToUpper(string(id)))
			}
			if strings.Join(ids, ",") != want {
				t.Errorf("%s: %s downs %v, want %s", name, d, ids, want)
			}
		}
		check(d, r.down)
		if r.reverse != 0 {
			if d.reverse() != r.reverse {
				t.Errorf("%s: reverse of %s is %s, want %s", name, d, d.reverse(), r.reverse)
			}
			check(d.reverse(), r.reverseDown)
		}
	}
}

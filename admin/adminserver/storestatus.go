package adminserver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/remember"
)

// maxListedMoves bounds the moves one answer lists (running ones first); the counts per
// type stay whole beyond it.
const maxListedMoves = 256

// Phases of a move that is not running (UnitMove.Phase); the running ones are the store's
// (joining, draining, copying, switching, dropping).
const (
	movePhaseQueued   = "queued"   // waits for a slot (sharding.store.max-simultaneous-moves)
	movePhaseRetrying = "retrying" // a step failed; it starts over after a while
)

// Parts a member plays in the metadata group (MemberStore.MetadataRole).
const (
	metaRoleLeader   = "leader"
	metaRoleFollower = "follower"
	metaRoleJoining  = "joining" // holds a replica that does not vote yet
	metaRoleNone     = "none"    // no replica: it forwards its metadata calls to a voter
	metaRoleStopped  = "stopped" // its replica could not start, or stopped (MetadataError)
)

// metadataRole is the part self plays in the metadata group, by its view st.
func metadataRole(self string, st remember.MetaStatus) string {
	switch {
	case st.Err != nil:
		return metaRoleStopped
	case !st.Replica:
		return metaRoleNone
	case !st.Voter:
		return metaRoleJoining
	case string(st.Leader) == self:
		return metaRoleLeader
	}
	return metaRoleFollower
}

func (b *nodeBackend) LocalStoreStatus(types []string) *adminpb.LocalStoreStatusResponse {
	zones := map[membership.NodeID]string{}
	if v := b.n.View(); v != nil {
		for _, m := range v.Members {
			zones[m.Node] = node.ZoneOf(m.Roles)
		}
	}
	return localStoreStatus(b.Self(), b.n.StoreStatus(), zones, types, time.Now())
}

// localStoreStatus sums up a member's part of the store (st) for types (every type when
// empty): the units it hosts per type, its moves (running first, at most maxListedMoves),
// and what it holds as a replica. zones gives the members' zones.
func localStoreStatus(self string, st node.StoreStatus, zones map[membership.NodeID]string, types []string, now time.Time) *adminpb.LocalStoreStatusResponse {
	want := func(typ string) bool { return len(types) == 0 || slices.Contains(types, typ) }
	out := &adminpb.LocalStoreStatusResponse{ReplicationFactor: uint32(st.ReplicationFactor), Metadata: nodeIDs(st.Meta)}
	me := &adminpb.MemberStore{Node: self, Zone: zones[membership.NodeID(self)], MovesRunning: uint32(st.Moves.Running),
		MovesQueued: uint32(st.Moves.Queued), MaxMoves: uint32(st.Moves.MaxMoves), MetadataKeys: uint64(st.MetaKeys),
		MetadataReplica: slices.Contains(st.Meta, membership.NodeID(self)), Holdings: typeHoldings(st.Holdings, want),
		Counters: &adminpb.MoveCounters{Started: st.Stats.MovesStarted, Finished: st.Stats.Moves, Failed: st.Stats.MovesFailed,
			Abandoned: st.Stats.Abandoned, Copied: st.Stats.Copied}}
	me.MetadataRole, me.MetadataLeader = metadataRole(self, st.MetaGroup), string(st.MetaGroup.Leader)
	me.MetadataTerm, me.MetadataApplied = st.MetaGroup.Term, st.MetaGroup.Applied
	if st.MetaGroup.Err != nil {
		me.MetadataError = st.MetaGroup.Err.Error()
	}
	out.Member = me
	byType := map[string]*adminpb.LocalTypeUnits{}
	inSets := map[string]map[string]uint32{} // type → member → sets
	for _, u := range st.Units {
		if !want(u.Unit.Type) {
			continue
		}
		tu := byType[u.Unit.Type]
		if tu == nil {
			tu = &adminpb.LocalTypeUnits{EntityType: u.Unit.Type}
			byType[u.Unit.Type] = tu
			inSets[u.Unit.Type] = map[string]uint32{}
		}
		tu.Units++
		switch {
		case !u.Known:
			tu.Unknown++
		case len(u.Config.Set) >= st.ReplicationFactor:
			tu.Full++
		default:
			tu.Short++
		}
		if u.Known {
			for _, id := range u.Config.Set {
				inSets[u.Unit.Type][string(id)]++
			}
			if z := zoneSpread(u.Config.Set, zones); z > 0 && (tu.ZonesMin == 0 || z < tu.ZonesMin) {
				tu.ZonesMin = z
			}
		}
		mv := unitMove(self, u, now)
		if mv == nil {
			continue
		}
		switch mv.Phase {
		case movePhaseQueued:
			tu.Queued++
		default:
			tu.Moving++
		}
		if u.Err != "" {
			tu.Failed++
		}
		out.Moves = append(out.Moves, mv)
	}
	for _, typ := range slices.Sorted(maps.Keys(byType)) {
		tu := byType[typ]
		for _, id := range slices.Sorted(maps.Keys(inSets[typ])) {
			tu.InSets = append(tu.InSets, &adminpb.SetCount{Node: id, Sets: inSets[typ][id]})
		}
		out.Types = append(out.Types, tu)
	}
	out.Moves, out.MovesTruncated = listMoves(out.Moves)
	return out
}

// unitMove is the move of hosted unit u, or nil when its records are where they should be.
func unitMove(host string, u remember.UnitStatus, now time.Time) *adminpb.UnitMove {
	mv := &adminpb.UnitMove{EntityType: u.Unit.Type, Shard: u.Unit.Shard, Host: host, Epoch: u.Epoch,
		From: nodeIDs(u.Config.Set), To: nodeIDs(u.Config.Next), Copied: uint64(u.Copied), Total: uint64(u.Held), Error: u.Err}
	switch {
	case u.Phase != "":
		mv.Phase = u.Phase
		if !u.Since.IsZero() {
			mv.ElapsedMs = uint64(max(now.Sub(u.Since), 0).Milliseconds())
		}
	case u.Queued:
		mv.Phase = movePhaseQueued
	case u.Moving || u.Err != "":
		mv.Phase = movePhaseRetrying
	default:
		return nil
	}
	mv.Total = max(mv.Total, mv.Copied)
	return mv
}

// listMoves sorts moves, running ones first, then by type and shard, and keeps at most
// maxListedMoves; cut says some were left out.
func listMoves(moves []*adminpb.UnitMove) (out []*adminpb.UnitMove, cut bool) {
	rank := func(m *adminpb.UnitMove) int {
		switch m.Phase {
		case movePhaseRetrying:
			return 1
		case movePhaseQueued:
			return 2
		}
		return 0
	}
	slices.SortFunc(moves, func(a, b *adminpb.UnitMove) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.EntityType, b.EntityType), compareShards(a.Shard, b.Shard))
	})
	if len(moves) > maxListedMoves {
		return moves[:maxListedMoves], true
	}
	return moves, false
}

// compareShards orders shard ids numerically when both are numbers, else as text.
func compareShards(a, b string) int {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// zoneSpread is how many zones set spans; 0 when none of its members declares one.
func zoneSpread(set []membership.NodeID, zones map[membership.NodeID]string) uint32 {
	seen := map[string]bool{}
	declared := false
	for _, id := range set {
		z := zones[id]
		declared = declared || z != ""
		seen[z] = true
	}
	if !declared {
		return 0
	}
	return uint32(len(seen))
}

// typeHoldings sums up holdings per entity type, of the types want accepts.
func typeHoldings(hs []remember.Holding, want func(string) bool) []*adminpb.TypeHolding {
	var out []*adminpb.TypeHolding
	for _, h := range hs { // sorted by type, then shard
		if !want(h.Unit.Type) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].EntityType != h.Unit.Type {
			out = append(out, &adminpb.TypeHolding{EntityType: h.Unit.Type})
		}
		th := out[len(out)-1]
		th.Units++
		th.Records += uint64(max(h.Keys-h.Tombstones, 0))
		th.Tombstones += uint64(h.Tombstones)
	}
	return out
}

// storeStatus asks every member for its part of the store at once, each within the query
// timeout, and adds their answers up. Members that do not answer are listed (PARTIAL):
// their units and what they hold are missing from the sums.
func (s *Server) storeStatus(ctx context.Context, req *adminpb.StoreStatusRequest) *adminpb.Response {
	if bad := s.checkTypes(req.EntityTypes...); bad != nil {
		return bad
	}
	timeout := s.queryTimeout(req.TimeoutMs)
	targets, resps, errs := s.askLiveMembers(ctx, &adminpb.Request{Call: &adminpb.Request_LocalStoreStatus{LocalStoreStatus: &adminpb.LocalStoreStatusRequest{EntityTypes: req.EntityTypes}}},
		timeout, "store status", func(r *adminpb.Response) bool { return r.GetLocalStoreStatus() != nil })
	answers := make([]*adminpb.LocalStoreStatusResponse, 0, len(resps))
	var failed []*adminpb.FailedMember
	for i, r := range resps {
		if errs[i] != nil {
			failed = append(failed, &adminpb.FailedMember{Node: targets[i], Error: errs[i].Error()})
			continue
		}
		answers = append(answers, r.GetLocalStoreStatus())
	}
	out := mergeStoreStatus(s.backend.Self(), answers, failed)
	out.TimeoutMs = uint64(timeout.Milliseconds())
	resp := &adminpb.Response{Result: &adminpb.Response_StoreStatus{StoreStatus: out}}
	if len(failed) > 0 {
		names := make([]string, len(failed))
		for i, f := range failed {
			names[i] = f.Node
		}
		resp.Code = adminpb.Code_PARTIAL
		resp.Error = fmt.Sprintf("%d of %d members did not answer within %v: %s", len(failed), len(targets), timeout, strings.Join(names, ", "))
	}
	return resp
}

// mergeStoreStatus adds up the members' answers: the units per type (each hosted by one
// member), the sets each member is in, the moves.
func mergeStoreStatus(self string, answers []*adminpb.LocalStoreStatusResponse, failed []*adminpb.FailedMember) *adminpb.StoreStatusResponse {
	out := &adminpb.StoreStatusResponse{Node: self, Failed: failed}
	types := map[string]*adminpb.TypeUnits{}
	inSets := map[string]map[string]uint32{} // type → member → sets
	members := map[string]*adminpb.MemberStore{}
	for _, a := range answers {
		if a.Member != nil {
			members[a.Member.Node] = a.Member
		}
		if a.Member.GetNode() == self || out.ReplicationFactor == 0 {
			out.ReplicationFactor, out.Metadata = a.ReplicationFactor, a.Metadata
		}
		for _, lt := range a.Types {
			tu := types[lt.EntityType]
			if tu == nil {
				tu = &adminpb.TypeUnits{EntityType: lt.EntityType}
				types[lt.EntityType] = tu
				inSets[lt.EntityType] = map[string]uint32{}
			}
			tu.Units += lt.Units
			tu.Full += lt.Full
			tu.Short += lt.Short
			tu.Unknown += lt.Unknown
			tu.Moving += lt.Moving
			tu.Queued += lt.Queued
			tu.Failed += lt.Failed
			if lt.ZonesMin > 0 && (tu.ZonesMin == 0 || lt.ZonesMin < tu.ZonesMin) {
				tu.ZonesMin = lt.ZonesMin
			}
			for _, sc := range lt.InSets {
				inSets[lt.EntityType][sc.Node] += sc.Sets
			}
		}
		out.Moves = append(out.Moves, a.Moves...)
		out.MovesTruncated = out.MovesTruncated || a.MovesTruncated
	}
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		tu := types[typ]
		for _, id := range slices.Sorted(maps.Keys(inSets[typ])) {
			n := inSets[typ][id]
			if tu.Members == 0 || n < tu.PerMemberMin {
				tu.PerMemberMin = n
			}
			tu.PerMemberMax = max(tu.PerMemberMax, n)
			tu.Members++
			if m := members[id]; m != nil {
				m.Sets = append(m.Sets, &adminpb.TypeSets{EntityType: typ, Sets: n})
			}
		}
		out.Types = append(out.Types, tu)
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		out.Members = append(out.Members, members[id])
	}
	var cut bool
	out.Moves, cut = listMoves(out.Moves)
	out.MovesTruncated = out.MovesTruncated || cut
	return out
}

func (s *Server) localStoreStatus(req *adminpb.LocalStoreStatusRequest) *adminpb.Response {
	return &adminpb.Response{Result: &adminpb.Response_LocalStoreStatus{LocalStoreStatus: s.backend.LocalStoreStatus(req.EntityTypes)}}
}

func nodeIDs(ids []membership.NodeID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

package adminserver

import (
	"context"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/membership"
)

// livenessTimeout bounds the turn of the member's loop that proves it live.
const livenessTimeout = 2 * time.Second

// readyRegions remembers the entity types whose region has registered with its coordinator
// once: as Akka's sharding health check, a region stays ready after that, so a coordinator
// moving does not fail every member's readiness at once.
type readyRegions struct {
	mu   sync.Mutex
	seen map[string]bool
}

// check records a region's registration and reports whether the region counts as ready.
func (r *readyRegions) check(typ string, registered bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if registered {
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		r.seen[typ] = true
	}
	return r.seen[typ]
}

// health answers liveness (the member's loop takes a turn) and readiness (an Up member
// holding the majority lease whose regions have registered with their coordinators).
func (s *Server) health(ctx context.Context) *adminpb.Response {
	out := &adminpb.HealthResponse{Node: s.backend.Self(), Warnings: s.backend.Warnings()}
	resp := &adminpb.Response{Result: &adminpb.Response_Health{Health: out}}
	pctx, cancel := context.WithTimeout(ctx, livenessTimeout)
	defer cancel()
	if err := s.backend.Ping(pctx); err != nil {
		out.Reasons = append(out.Reasons, "not live: the member's loop did not take a turn within "+livenessTimeout.String()+": "+err.Error())
		return resp
	}
	out.Live = true
	st, err := s.backend.LocalStats(pctx, nil, false)
	if err != nil {
		out.Reasons = append(out.Reasons, "no region state: "+err.Error())
		return resp
	}
	out.Status, out.Serving = st.Status, st.Serving
	if st.Status != "Up" {
		why := "member is " + st.Status + ", not Up"
		if m := s.backend.Members(); m != nil {
			if wait := membership.RestartWait(int(m.RestartNeed), int(m.RestartJoined)); wait != "" {
				why += ": " + wait
			}
		}
		out.Reasons = append(out.Reasons, why)
	}
	if !st.Serving {
		out.Reasons = append(out.Reasons, "no majority lease: the member does not hear a majority of the cluster")
	}
	out.Store = s.backend.Store()
	out.Reasons = append(out.Reasons, storeReasons(out.Store)...)
	for _, r := range st.Regions {
		rh := &adminpb.RegionHealth{EntityType: r.EntityType, Registered: r.Registered, Proxy: r.Proxy, Coordinator: r.Coordinator, NoNewShards: r.NoNewShards}
		rh.Ready = s.ready.check(r.EntityType, r.Registered)
		if !rh.Ready {
			why := "region " + r.EntityType + " has not registered with its coordinator"
			if r.Coordinator == "" {
				why += " (none known yet)"
			} else {
				why += " " + r.Coordinator
			}
			out.Reasons = append(out.Reasons, why)
		}
		out.Regions = append(out.Regions, rh)
	}
	out.Ready = len(out.Reasons) == 0
	return resp
}

package adminserver

import (
	"context"
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
)

// progressInterval is how often a followed shutdown reports.
const progressInterval = 250 * time.Millisecond

// shutdown begins the member's graceful shutdown (hand off every shard, then leave) and
// answers with its progress: once, or, with follow, every progressInterval until the
// member has left. The shutdown goes on when the caller goes away.
func (s *Server) shutdown(ctx context.Context, req *adminpb.ShutdownRequest, emit emitter) error {
	already := !s.backend.Shutdown()
	start := time.Now()
	for {
		p := s.progress(ctx, start)
		p.Already = already
		resp := &adminpb.Response{Result: &adminpb.Response_Shutdown{Shutdown: p}}
		if !req.Follow || p.Phase != admin.PhaseHandingOff && p.Phase != admin.PhaseLeaving {
			if p.Phase != admin.PhaseHandingOff && p.Phase != admin.PhaseLeaving && p.Phase != admin.PhaseLeft {
				resp.Code, resp.Error = adminpb.Code_FAILED, "the member stopped without leaving gracefully: "+p.Phase
			}
			return emit(resp)
		}
		resp.More = true
		if err := emit(resp); err != nil {
			return err
		}
		select {
		case <-time.After(progressInterval):
		case <-s.backend.Done():
		case <-ctx.Done():
			return nil
		case <-s.quit:
		}
	}
}

// progress reports how far the shutdown is.
func (s *Server) progress(ctx context.Context, start time.Time) *adminpb.ShutdownProgress {
	p := &adminpb.ShutdownProgress{Node: s.backend.Self(), ElapsedMs: uint64(time.Since(start).Milliseconds())}
	stopped := func() *adminpb.ShutdownProgress {
		p.Status = "Removed"
		if p.Phase = admin.PhaseLeft; s.backend.StopReason() != "left" {
			p.Phase = "stopped (" + orUnknown(s.backend.StopReason()) + ")"
		}
		return p
	}
	select {
	case <-s.backend.Done():
		return stopped()
	default:
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := s.backend.LocalStats(qctx, nil, false)
	if errors.Is(err, node.ErrStopped) {
		return stopped()
	}
	p.Phase = admin.PhaseHandingOff
	if err != nil {
		p.Status = "unknown (" + err.Error() + ")"
		return p
	}
	p.Status = st.Status
	for _, r := range st.Regions {
		p.Shards += uint64(len(r.Shards))
		p.Buffered += r.Buffered
	}
	if st.Status == "Leaving" || st.Status == "Exiting" {
		p.Phase = admin.PhaseLeaving
	}
	return p
}

package adminserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// queryTimeout is the bound of each member's answer to a fan-out: ms if set (at most the
// call's own timeout), else the member's shard-region-query-timeout.
func (s *Server) queryTimeout(ms uint64) time.Duration {
	if ms > 0 {
		return time.Duration(min(ms, uint64(admin.CallTimeout.Milliseconds()))) * time.Millisecond
	}
	return s.cfg.QueryTimeout
}

// askLiveMembers asks every member that takes part in the cluster (liveMembers) req at
// once, each within timeout, and returns the members, their answers and, where an answer is
// missing, why (what names the result the answer lacked). answers[i] is nil when errs[i] is
// set.
func (s *Server) askLiveMembers(ctx context.Context, req *adminpb.Request, timeout time.Duration, what string,
	has func(*adminpb.Response) bool) (targets []string, answers []*adminpb.Response, errs []error) {
	targets = liveMembers(s.backend.Members())
	answers, errs = make([]*adminpb.Response, len(targets)), make([]error, len(targets))
	var wg sync.WaitGroup
	for i, node := range targets {
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := s.ask(qctx, node, req)
			switch {
			case err != nil && qctx.Err() != nil:
				errs[i] = fmt.Errorf("no answer within %v", timeout)
			case err != nil:
				errs[i] = err
			case !has(resp):
				errs[i] = fmt.Errorf("answered without its %s", what)
			default:
				answers[i] = resp
			}
		})
	}
	wg.Wait()
	return targets, answers, errs
}

package adminserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// defaultHistoryLimit caps a history answer when the request sets no limit.
const defaultHistoryLimit = 1000

// history answers the placement history, newest records kept when more match than the
// limit.
func (s *Server) history(ctx context.Context, req *adminpb.HistoryRequest) *adminpb.Response {
	if bad := s.checkTypes(req.EntityTypes...); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	h, err := s.backend.History(ctx, req)
	if err != nil {
		return callError(err)
	}
	limit := int(req.Limit)
	if limit <= 0 {
		limit = defaultHistoryLimit
	}
	if len(h.Records) > limit {
		h.Records, h.Truncated = h.Records[len(h.Records)-limit:], true
	}
	resp := &adminpb.Response{Result: &adminpb.Response_History{History: h}}
	if len(h.Missing) > 0 {
		resp.Code = adminpb.Code_PARTIAL
		resp.Error = fmt.Sprintf("partial placement history: no quorum of the metadata's replicas answered; the records of %s are missing", strings.Join(h.Missing, ", "))
	}
	return resp
}

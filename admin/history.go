package admin

import (
	"context"
	"errors"
	"time"

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
	return &adminpb.Response{Result: &adminpb.Response_History{History: h}}
}

// History reads the placement history (see HistoryRequest).
func (c *Client) History(ctx context.Context, types []string, shard string, since time.Time, limit int) (*adminpb.HistoryResponse, error) {
	req := &adminpb.HistoryRequest{EntityTypes: types, Shard: shard, Limit: uint32(max(limit, 0))}
	if !since.IsZero() {
		req.SinceUnixMs = since.UnixMilli()
	}
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_History{History: req}})
	if err != nil {
		return nil, err
	}
	return resp.GetHistory(), nil
}

// Handoffs returns every handoff in progress; members that did not answer are in Failed.
func (c *Client) Handoffs(ctx context.Context, types []string, timeout time.Duration) (*adminpb.HandoffsResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Handoffs{Handoffs: &adminpb.HandoffsRequest{EntityTypes: types, TimeoutMs: uint64(max(timeout.Milliseconds(), 0))}}})
	if err != nil {
		return nil, err
	}
	if resp.GetHandoffs() == nil {
		return nil, errors.New("the member answered without the handoffs")
	}
	return resp.GetHandoffs(), nil
}

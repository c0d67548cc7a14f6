package adminserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
)

// reminders answers the durable reminders of a type (or of one entity).
func (s *Server) reminders(ctx context.Context, req *adminpb.RemindersRequest) *adminpb.Response {
	if req.EntityType == "" {
		return refuse(adminpb.Code_BAD_REQUEST, "reminders: name the entity type")
	}
	if bad := s.checkTypes(req.EntityType); bad != nil {
		return bad
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	rs, err := s.backend.Reminders(ctx, req.EntityType, req.Entity)
	var partial *node.PartialError
	if err != nil && !errors.As(err, &partial) {
		return callError(err)
	}
	limit := int(req.Limit)
	if limit <= 0 {
		limit = defaultHistoryLimit
	}
	resp := &adminpb.RemindersResponse{}
	if len(rs) > limit {
		rs, resp.Truncated = rs[:limit], true
	}
	for _, r := range rs {
		resp.Reminders = append(resp.Reminders, &adminpb.ReminderRecord{EntityType: r.Type, Shard: string(r.Shard), Entity: string(r.Entity),
			Name: r.Name, DueUnixMs: r.Due.UnixMilli(), EveryMs: uint64(max(r.Every.Milliseconds(), 0)), Payload: r.Payload, Epoch: r.Epoch})
	}
	out := &adminpb.Response{Result: &adminpb.Response_Reminders{Reminders: resp}}
	if partial != nil {
		resp.Missing = nodeIDs(partial.Missing)
		out.Code = adminpb.Code_PARTIAL
		out.Error = fmt.Sprintf("partial reminders: the reminders only %s hold are missing", strings.Join(resp.Missing, ", "))
	}
	return out
}

// metaCopies says where a partial read of the cluster metadata (history, audit) comes from:
// the copies the members that answered hold, not the metadata group.
func metaCopies(missing []string) string {
	return fmt.Sprintf("the cluster metadata did not answer (no majority of its members; %s did not answer): "+
		"shown are the copies the members that answered hold, this one's included, possibly stale "+
		"(changes made since they last applied are missing)", strings.Join(missing, ", "))
}

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
		resp.Error = fmt.Sprintf("partial placement history: %s", metaCopies(h.Missing))
	}
	return resp
}

package admin

import (
	"context"
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Audit returns the admin calls the members took, oldest first (since: none older; limit:
// at most that many, the newest), each verified by the member asked against its own admin
// set.
func (c *Client) Audit(ctx context.Context, since time.Time, limit int) (*adminpb.AuditResponse, error) {
	req := &adminpb.AuditRequest{Limit: uint32(max(limit, 0))}
	if !since.IsZero() {
		req.SinceUnixMs = since.UnixMilli()
	}
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Audit{Audit: req}})
	if err != nil {
		return nil, err
	}
	if resp.GetAudit() == nil {
		return nil, errors.New("the member answered without the audit log")
	}
	return resp.GetAudit(), nil
}

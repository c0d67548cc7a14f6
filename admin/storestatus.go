package admin

import (
	"context"
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// StoreStatus asks the member for every member's part of the replicated store: the units of
// types (all when empty), their replica sets and moves, what each member holds. Each member
// answers within timeout (0: the member's shard-region-query-timeout); those that do not
// are listed in Failed (the answer is then PARTIAL).
func (c *Client) StoreStatus(ctx context.Context, types []string, timeout time.Duration) (*adminpb.StoreStatusResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_StoreStatus{StoreStatus: &adminpb.StoreStatusRequest{
		EntityTypes: types, TimeoutMs: uint64(max(timeout.Milliseconds(), 0))}}})
	if err != nil {
		return nil, err
	}
	if resp.GetStoreStatus() == nil {
		return nil, errors.New("the member answered without the store status")
	}
	return resp.GetStoreStatus(), nil
}

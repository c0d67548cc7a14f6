package admin

import (
	"context"
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

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

// Reminders lists the durable reminders of entity type typ (of entity, when set), at most
// limit (0: the member's cap).
func (c *Client) Reminders(ctx context.Context, typ, entity string, limit int) (*adminpb.RemindersResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Reminders{Reminders: &adminpb.RemindersRequest{EntityType: typ, Entity: entity, Limit: uint32(max(limit, 0))}}})
	if err != nil {
		return nil, err
	}
	if resp.GetReminders() == nil {
		return nil, errors.New("the member answered without the reminders")
	}
	return resp.GetReminders(), nil
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

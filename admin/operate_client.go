package admin

import (
	"context"
	"errors"

	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// Directive changes one of the operator's directives cluster-wide (see DirectiveRequest)
// and returns the directives in force afterwards, once every member that answers follows
// the change. When some do not (DirectivesResponse.NotFollowing: they take the caller for
// no admin of theirs, or have not read it yet), it returns them with a *CallError of code
// PARTIAL.
func (c *Client) Directive(ctx context.Context, d *adminpb.DirectiveRequest) (*adminpb.DirectivesResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Directive{Directive: d}})
	if err != nil {
		return nil, err
	}
	if resp.GetDirectives() == nil {
		return nil, errors.New("the member answered without the directives")
	}
	if resp.Code == adminpb.Code_PARTIAL {
		return resp.GetDirectives(), &CallError{Code: resp.Code, Message: resp.Error}
	}
	return resp.GetDirectives(), nil
}

// Drain drains member node (every shard moves away, none comes), or undrains it.
func (c *Client) Drain(ctx context.Context, node string, drain bool) (*adminpb.DirectivesResponse, error) {
	return c.Directive(ctx, &adminpb.DirectiveRequest{Kind: "drain", Node: node, Undo: !drain})
}

// RebalancePause pauses automatic rebalancing cluster-wide, or resumes it.
func (c *Client) RebalancePause(ctx context.Context, paused bool) (*adminpb.DirectivesResponse, error) {
	return c.Directive(ctx, &adminpb.DirectiveRequest{Kind: "pause", Undo: !paused})
}

// Directives returns the directives in force on the member (`rebalance status`).
func (c *Client) Directives(ctx context.Context) (*adminpb.DirectivesResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Directives{Directives: &adminpb.DirectivesRequest{}}})
	if err != nil {
		return nil, err
	}
	if resp.GetDirectives() == nil {
		return nil, errors.New("the member answered without the directives")
	}
	return resp.GetDirectives(), nil
}

// Plan is the dry run of rebalancing entity type typ now, or after join members join, or
// after member leave leaves. A partial answer (entity counts missing) lists what is missing
// in Problems.
func (c *Client) Plan(ctx context.Context, typ string, join int, leave string) (*adminpb.PlanResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Plan{Plan: &adminpb.PlanRequest{EntityType: typ, IfJoin: uint32(join), IfLeave: leave}}})
	if err != nil {
		return nil, err
	}
	if resp.GetPlan() == nil {
		return nil, errors.New("the member answered without the plan")
	}
	return resp.GetPlan(), nil
}

// DataRemove removes the stored internal data of stopped entity types, with state their
// entities' durable state too (dryRun: only counts), handing progress every report.
func (c *Client) DataRemove(ctx context.Context, types []string, scope DataScope, state, dryRun bool, progress func(*adminpb.DataRemoveProgress)) error {
	req := &adminpb.Request{Call: &adminpb.Request_DataRemove{DataRemove: &adminpb.DataRemoveRequest{EntityTypes: types, DryRun: dryRun, IncludeState: state,
		Shard: scope.Shard, Entity: scope.Entity}}}
	_, err := c.stream(ctx, req, func(resp *adminpb.Response) error {
		if p := resp.GetDataRemove(); p != nil {
			progress(p)
		}
		return nil
	})
	return err
}

// DataScope narrows DataRemove below the type: one shard's data, or one entity's (at most
// one of them; the zero value is the whole type).
type DataScope struct{ Shard, Entity string }

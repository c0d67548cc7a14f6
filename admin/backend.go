package admin

import (
	"context"
	"errors"
	"time"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/node"
)

// Backend answers admin calls from a running member.
type Backend interface {
	Members() *adminpb.MembersResponse
	Types() []string
	Tell(typ, entity string, payload []byte) error
	Ask(ctx context.Context, typ, entity string, payload []byte) ([]byte, error)
	RegionState(ctx context.Context, typ string) (*adminpb.RegionStateResponse, error)
}

// NodeBackend answers admin calls from a member's runtime.
func NodeBackend(n *node.Node) Backend { return nodeBackend{n} }

type nodeBackend struct{ n *node.Node }

func (b nodeBackend) Members() *adminpb.MembersResponse {
	v := b.n.View()
	resp := &adminpb.MembersResponse{Self: string(v.Self), Leader: string(v.Leader), Oldest: string(v.Oldest), Converged: v.Converged}
	unreachable := map[string]bool{}
	for _, u := range v.Unreachable {
		unreachable[string(u)] = true
	}
	for _, m := range v.Members {
		resp.Members = append(resp.Members, &adminpb.MemberInfo{
			Node:        string(m.Node),
			Incarnation: m.Incarnation,
			Addrs:       m.Addrs,
			Roles:       m.Roles,
			AppVersion:  string(m.AppVersion),
			Status:      m.Status.String(),
			UpNumber:    m.UpNumber,
			Reachable:   !unreachable[string(m.Node)],
			Oldest:      m.Node == v.Oldest,
			Leader:      m.Node == v.Leader,
		})
	}
	return resp
}

func (b nodeBackend) Types() []string { return b.n.TypeNames() }

func (b nodeBackend) Tell(typ, entity string, payload []byte) error {
	return b.n.TellEncoded(typ, entity, payload)
}

func (b nodeBackend) Ask(ctx context.Context, typ, entity string, payload []byte) ([]byte, error) {
	return b.n.AskEncoded(ctx, typ, entity, payload)
}

func (b nodeBackend) RegionState(ctx context.Context, typ string) (*adminpb.RegionStateResponse, error) {
	state, err := b.n.RegionState(ctx, typ)
	if err != nil {
		return nil, err
	}
	resp := &adminpb.RegionStateResponse{Node: string(b.n.ID())}
	for _, s := range state {
		ss := &adminpb.ShardState{Shard: string(s.Shard), Stopping: s.Stopping}
		for _, e := range s.Entities {
			ss.Entities = append(ss.Entities, string(e))
		}
		resp.Shards = append(resp.Shards, ss)
	}
	return resp, nil
}

// callError classifies an error of a backend call.
func callError(err error) *adminpb.Response {
	switch {
	case errors.Is(err, node.ErrUnknownType):
		return refuse(adminpb.Code_BAD_REQUEST, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return refuse(adminpb.Code_FAILED, "no answer in time: %v", err)
	}
	return refuse(adminpb.Code_FAILED, "%v", err)
}

// askTimeout is the default bound of an admin ask.
const askTimeout = 10 * time.Second

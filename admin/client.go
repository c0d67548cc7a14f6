package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/p2p"
)

// ClientConfig says how to reach a member.
type ClientConfig struct {
	// Node is the member's multiaddr, ending in /p2p/<peer id>.
	Node string
	// Identity is the caller's key: the member sees its peer id, and calls that change the
	// cluster are signed with it (they need an admin identity: one the member lists in
	// admin-allow, or one with an admin credential). nil: a fresh key for this client.
	Identity crypto.PrivKey
	// Credential is Identity's admin credential (trust.Credential.Raw), sent with every
	// signed call; nil: none (the identity must then be in the members' admin-allow).
	Credential []byte
	// ClusterKey is the cluster's private-network key, if it has one.
	ClusterKey pnet.PSK
}

// Client calls one member. Its methods may be used from several goroutines. A partial
// answer (some member did not answer within the query timeout) is returned without an
// error, with what failed in the result (StatsResponse.Failed, LocateResponse.Problems).
type Client struct {
	host       *p2p.Host
	node       peer.ID
	key        crypto.PrivKey
	credential []byte
}

// Dial connects to the member, within ctx's deadline if it has one. Errors wrap
// p2p.ErrPeerIDMismatch (the address names another member), p2p.ErrHandshake (the member
// refused us: another cluster key, an allow-list) or context.DeadlineExceeded (it did not
// answer in time).
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	ma, err := multiaddr.NewMultiaddr(cfg.Node)
	if err != nil {
		return nil, fmt.Errorf("--node %q is not a multiaddr: %w", cfg.Node, err)
	}
	if _, err := peer.AddrInfoFromP2pAddr(ma); err != nil {
		return nil, fmt.Errorf("--node %q must end in /p2p/<peer id> (see the addrs file in the member's data directory)", cfg.Node)
	}
	key := cfg.Identity
	if key == nil {
		if key, _, err = crypto.GenerateEd25519Key(nil); err != nil {
			return nil, err
		}
	}
	pc := p2p.Config{Identity: key, ClusterKey: cfg.ClusterKey}
	if dl, ok := ctx.Deadline(); ok {
		// A hung member fails at ctx's deadline, not at libp2p's own dial timeout.
		pc.DialTimeout = max(time.Until(dl), time.Millisecond)
	}
	host, err := p2p.New(ctx, pc)
	if err != nil {
		return nil, err
	}
	id, err := host.Connect(ctx, ma)
	if err != nil {
		host.Close()
		return nil, fmt.Errorf("cannot reach %s: %w", cfg.Node, err)
	}
	return &Client{host: host, node: id, key: key, credential: cfg.Credential}, nil
}

// Node returns the peer id of the member the client calls.
func (c *Client) Node() peer.ID { return c.node }

// Close releases the client's host.
func (c *Client) Close() error { return c.host.Close() }

// call makes one request and reads one response.
func (c *Client) call(ctx context.Context, req *adminpb.Request) (*adminpb.Response, error) {
	req, err := c.sign(req)
	if err != nil {
		return nil, err
	}
	return Call(ctx, c.host, c.node, req)
}

// sign signs a call that changes the cluster with the client's identity; other calls go as
// they are.
func (c *Client) sign(req *adminpb.Request) (*adminpb.Request, error) {
	if _, acc := CallInfo(req); acc != AccessAdmin {
		return req, nil
	}
	return SignRequest(req, c.key, c.credential, c.node, time.Now())
}

// stream makes a streaming request and hands each response but the last to fn (keepalives
// included: they have no result) until the last response, ctx, or fn's error. It returns
// the last response.
func (c *Client) stream(ctx context.Context, req *adminpb.Request, fn func(*adminpb.Response) error) (*adminpb.Response, error) {
	req, err := c.sign(req)
	if err != nil {
		return nil, err
	}
	st, err := openCall(ctx, c.host, c.node, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if _, ok := ctx.Deadline(); !ok {
		st.SetDeadline(time.Time{}) // a stream without an end: keepalives prove the member is there
	}
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	for {
		resp, err := readResponse(ctx, st)
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the member closed the stream")
		}
		if err != nil {
			return resp, err
		}
		if !resp.More {
			return resp, nil
		}
		if err := fn(resp); err != nil {
			return resp, err
		}
	}
}

// Members returns the member list as the member sees it.
func (c *Client) Members(ctx context.Context) (*adminpb.MembersResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Members{Members: &adminpb.MembersRequest{}}})
	if err != nil {
		return nil, err
	}
	m := resp.GetMembers()
	if m == nil {
		return nil, errors.New("the member answered without a member list")
	}
	return m, nil
}

// Types returns the entity types registered on the member.
func (c *Client) Types(ctx context.Context) ([]string, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Types{Types: &adminpb.TypesRequest{}}})
	if err != nil {
		return nil, err
	}
	return resp.GetTypes().GetNames(), nil
}

// Tell sends a message (in the entity type's message codec) through the member.
func (c *Client) Tell(ctx context.Context, typ, entity string, payload []byte) error {
	_, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Tell{Tell: &adminpb.TellRequest{EntityType: typ, Entity: entity, Payload: payload}}})
	return err
}

// Ask asks an entity through the member and returns the reply in the type's reply codec.
func (c *Client) Ask(ctx context.Context, typ, entity string, payload []byte) ([]byte, error) {
	req := &adminpb.AskRequest{EntityType: typ, Entity: entity, Payload: payload}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMs = uint64(max(time.Until(dl).Milliseconds()-50, 1))
	}
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Ask{Ask: req}})
	if err != nil {
		return nil, err
	}
	return resp.GetAsk().GetPayload(), nil
}

// RegionState returns the shards of an entity type on the member and their live entities.
func (c *Client) RegionState(ctx context.Context, typ string) (*adminpb.RegionStateResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_RegionState{RegionState: &adminpb.RegionStateRequest{EntityType: typ}}})
	if err != nil {
		return nil, err
	}
	return resp.GetRegionState(), nil
}

// Stats asks the member to query every member's regions of types (all when empty), each
// within timeout (0: the member's shard-region-query-timeout). The members that did not
// answer are in the result's Failed.
func (c *Client) Stats(ctx context.Context, types []string, timeout time.Duration) (*adminpb.StatsResponse, error) {
	req := &adminpb.StatsRequest{EntityTypes: types, TimeoutMs: uint64(max(timeout.Milliseconds(), 0))}
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Stats{Stats: req}})
	if err != nil {
		return nil, err
	}
	if resp.GetStats() == nil {
		return nil, errors.New("the member answered without stats")
	}
	return resp.GetStats(), nil
}

// LocalStats returns the member's own regions only.
func (c *Client) LocalStats(ctx context.Context, types []string) (*adminpb.LocalStatsResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_LocalStats{LocalStats: &adminpb.LocalStatsRequest{EntityTypes: types}}})
	if err != nil {
		return nil, err
	}
	return resp.GetLocalStats(), nil
}

// Locate finds an entity's shard, the shard's home, and whether the entity runs. Members
// that did not answer are in the result's Problems.
func (c *Client) Locate(ctx context.Context, typ, entity string) (*adminpb.LocateResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Locate{Locate: &adminpb.LocateRequest{EntityType: typ, Entity: entity}}})
	if err != nil {
		return nil, err
	}
	if resp.GetLocate() == nil {
		return nil, errors.New("the member answered without a location")
	}
	return resp.GetLocate(), nil
}

// Health returns the member's liveness and readiness.
func (c *Client) Health(ctx context.Context) (*adminpb.HealthResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Health{Health: &adminpb.HealthRequest{}}})
	if err != nil {
		return nil, err
	}
	if resp.GetHealth() == nil {
		return nil, errors.New("the member answered without its health")
	}
	return resp.GetHealth(), nil
}

// Watch hands fn every sharding and member event of types (all when empty) until ctx
// ends (nil), the member stops (an error), or fn returns an error. ready, if not nil, is
// called once the subscription is live.
func (c *Client) Watch(ctx context.Context, types []string, noMembers bool, ready func(), fn func(*adminpb.WatchEvent) error) error {
	req := &adminpb.Request{Call: &adminpb.Request_Watch{Watch: &adminpb.WatchRequest{EntityTypes: types, NoMembers: noMembers}}}
	_, err := c.stream(ctx, req, func(resp *adminpb.Response) error {
		if ready != nil {
			ready()
			ready = nil
		}
		if ev := resp.GetEvent(); ev != nil {
			return fn(ev)
		}
		return nil // a keepalive
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Shutdown asks the member to shut down gracefully: hand off every shard, then leave. With
// progress, it follows until the member has left (or ctx ends), handing progress every
// report; without, it returns at once with the state the shutdown starts from.
func (c *Client) Shutdown(ctx context.Context, progress func(*adminpb.ShutdownProgress)) (*adminpb.ShutdownProgress, error) {
	req := &adminpb.Request{Call: &adminpb.Request_Shutdown{Shutdown: &adminpb.ShutdownRequest{Follow: progress != nil}}}
	var last *adminpb.ShutdownProgress
	resp, err := c.stream(ctx, req, func(resp *adminpb.Response) error {
		if p := resp.GetShutdown(); p != nil {
			last = p
			progress(p)
		}
		return nil
	})
	if resp.GetShutdown() != nil {
		last = resp.GetShutdown()
	}
	if err != nil {
		return last, err
	}
	if last == nil {
		return nil, errors.New("the member answered without progress")
	}
	return last, nil
}

// Down marks member node Down through the member; with check, it only says whether the
// member would do it. Without force, a reachable member of the majority is refused.
func (c *Client) Down(ctx context.Context, node string, force, check bool) (*adminpb.DownResponse, error) {
	resp, err := c.call(ctx, &adminpb.Request{Call: &adminpb.Request_Down{Down: &adminpb.DownRequest{Node: node, Force: force, Check: check}}})
	if err != nil {
		return nil, err
	}
	if resp.GetDown() == nil {
		return nil, errors.New("the member answered without the result")
	}
	return resp.GetDown(), nil
}

package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/p2p"
	"github.com/shardmesh/shardmesh/wire"
)

// CallError is a call the member refused or could not carry out.
type CallError struct {
	Code    adminpb.Code
	Message string
}

func (e *CallError) Error() string { return e.Message }

// ClientConfig says how to reach a member.
type ClientConfig struct {
	// Node is the member's multiaddr, ending in /p2p/<peer id>.
	Node string
	// Identity is the caller's key (an admin identity for calls that change the cluster);
	// nil: a fresh key for this call.
	Identity crypto.PrivKey
	// ClusterKey is the cluster's private-network key, if it has one.
	ClusterKey pnet.PSK
}

// Client calls one member.
type Client struct {
	host *p2p.Host
	node peer.ID
}

// Dial connects to the member.
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
	host, err := p2p.New(ctx, p2p.Config{Identity: key, ClusterKey: cfg.ClusterKey})
	if err != nil {
		return nil, err
	}
	id, err := host.Connect(ctx, ma)
	if err != nil {
		host.Close()
		return nil, fmt.Errorf("cannot reach %s: %w", cfg.Node, err)
	}
	return &Client{host: host, node: id}, nil
}

// Close releases the client's host.
func (c *Client) Close() error { return c.host.Close() }

// call makes one request and reads one response.
func (c *Client) call(ctx context.Context, req *adminpb.Request) (*adminpb.Response, error) {
	req.ProtocolVersion = wire.ProtocolVersion
	st, err := c.host.OpenStream(ctx, c.node, Protocol)
	if err != nil {
		return nil, fmt.Errorf("open admin stream: %w", err)
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	} else {
		st.SetDeadline(time.Now().Add(callTimeout))
	}
	frame, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := st.WriteFrame(frame); err != nil {
		return nil, fmt.Errorf("send admin request: %w", err)
	}
	out, err := st.ReadFrame()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("read admin answer: %w", err)
	}
	var resp adminpb.Response
	if err := proto.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("malformed admin answer: %w", err)
	}
	if resp.Code != adminpb.Code_OK && resp.Code != adminpb.Code_PARTIAL {
		return &resp, &CallError{Code: resp.Code, Message: resp.Error}
	}
	return &resp, nil
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

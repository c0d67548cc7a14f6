package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/shardmesh/shardmesh/admin"
	"github.com/shardmesh/shardmesh/admin/adminpb"
)

// AdminSource is the dashboard's Source over the admin protocol. It asks one entry member
// and, when that member stops answering (it was shut down, or it died), moves on to
// another member it has seen in the member list. Calls about one member (region state,
// shutdown) go to that member itself, over a connection kept for the next call.
type AdminSource struct {
	cfg  admin.ClientConfig // Identity and ClusterKey for every connection
	self peer.ID            // the dashboard's own peer id

	mu      sync.Mutex
	entry   *admin.Client
	clients map[string]*admin.Client // by member peer id, the entry included
	known   []*adminpb.MemberInfo    // the last member list, for failover
}

// NewAdminSource makes a source that asks entry, a client dialled with cfg; cfg.Identity
// must be set (the source dials other members with it and uses its peer id to learn
// whether it is an admin identity).
func NewAdminSource(entry *admin.Client, cfg admin.ClientConfig) (*AdminSource, error) {
	if cfg.Identity == nil {
		return nil, errors.New("dashboard: the admin source needs the identity the entry client was dialled with")
	}
	self, err := peer.IDFromPrivateKey(cfg.Identity)
	if err != nil {
		return nil, fmt.Errorf("dashboard: identity: %w", err)
	}
	return &AdminSource{cfg: cfg, self: self, entry: entry, clients: map[string]*admin.Client{entry.Node().String(): entry}}, nil
}

// Entry returns the peer id of the member asked now.
func (s *AdminSource) Entry() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entry.Node().String()
}

// Members returns the member list and remembers it for failover.
func (s *AdminSource) Members(ctx context.Context) (*adminpb.MembersResponse, error) {
	var out *adminpb.MembersResponse
	err := s.viaEntry(ctx, func(c *admin.Client) (err error) {
		out, err = c.Members(ctx)
		return err
	})
	if err == nil {
		s.mu.Lock()
		s.known = out.GetMembers()
		s.mu.Unlock()
	}
	return out, err
}

// Stats asks the entry member for every member's regions, within the member's
// shard-region-query-timeout.
func (s *AdminSource) Stats(ctx context.Context) (*adminpb.StatsResponse, error) {
	var out *adminpb.StatsResponse
	err := s.viaEntry(ctx, func(c *admin.Client) (err error) {
		out, err = c.Stats(ctx, nil, 0)
		return err
	})
	if err != nil && out == nil {
		return nil, err
	}
	return out, nil
}

// Handoffs asks the entry member for every handoff in progress, each member's part within
// its shard-region-query-timeout. A partial answer (some members did not answer) comes
// without an error: they are in its Failed.
func (s *AdminSource) Handoffs(ctx context.Context) (*adminpb.HandoffsResponse, error) {
	var out *adminpb.HandoffsResponse
	err := s.viaEntry(ctx, func(c *admin.Client) (err error) {
		out, err = c.Handoffs(ctx, nil, 0)
		return err
	})
	var ce *admin.CallError
	if out != nil && (err == nil || errors.As(err, &ce) && ce.Code == adminpb.Code_PARTIAL) {
		return out, nil
	}
	if err == nil {
		err = errNoAnswer
	}
	return nil, err
}

// RegionState asks member m for its region of typ.
func (s *AdminSource) RegionState(ctx context.Context, m *adminpb.MemberInfo, typ string) (*adminpb.RegionStateResponse, error) {
	c, err := s.client(ctx, m)
	if err != nil {
		return nil, err
	}
	out, err := c.RegionState(ctx, typ)
	s.forgetBroken(c, err)
	return out, err
}

// Watch follows the entry member's event stream.
func (s *AdminSource) Watch(ctx context.Context, fn func(*adminpb.WatchEvent)) error {
	return s.viaEntry(ctx, func(c *admin.Client) error {
		return c.Watch(ctx, nil, false, nil, func(ev *adminpb.WatchEvent) error {
			fn(ev)
			return nil
		})
	})
}

// CheckAdmin asks the entry member whether it would down the dashboard's own peer id, which
// is no member: an admin identity gets "unknown member" (BAD_REQUEST), any other a refusal
// (REFUSED) naming the reason. Nothing changes either way.
func (s *AdminSource) CheckAdmin(ctx context.Context) error {
	err := s.viaEntry(ctx, func(c *admin.Client) error {
		_, err := c.Down(ctx, s.self.String(), false, true)
		return err
	})
	var ce *admin.CallError
	if errors.As(err, &ce) && ce.Code == adminpb.Code_BAD_REQUEST {
		return nil
	}
	return err
}

// Supported says every action works with this daemon's admin protocol.
func (s *AdminSource) Supported(Action) error { return nil }

// Shutdown asks member m to shut down gracefully; it returns once m has accepted.
func (s *AdminSource) Shutdown(ctx context.Context, m *adminpb.MemberInfo) error {
	c, err := s.client(ctx, m)
	if err != nil {
		return err
	}
	_, err = c.Shutdown(ctx, nil)
	s.forgetBroken(c, err)
	return err
}

// Drain drains member node (every shard moves away, none comes), or undrains it.
func (s *AdminSource) Drain(ctx context.Context, node string, drain bool) error {
	return s.viaEntry(ctx, func(c *admin.Client) error {
		_, err := c.Drain(ctx, node, drain)
		return err
	})
}

// RebalancePause pauses or resumes automatic rebalancing cluster-wide and returns whether it
// is paused now.
func (s *AdminSource) RebalancePause(ctx context.Context, paused bool) (bool, error) {
	var now bool
	err := s.viaEntry(ctx, func(c *admin.Client) error {
		d, err := c.RebalancePause(ctx, paused)
		if err == nil {
			now = d.RebalancePaused
		}
		return err
	})
	return now, err
}

// RebalanceStatus returns whether automatic rebalancing is paused.
func (s *AdminSource) RebalanceStatus(ctx context.Context) (bool, error) {
	var paused bool
	err := s.viaEntry(ctx, func(c *admin.Client) error {
		d, err := c.Directives(ctx)
		if err == nil {
			paused = d.RebalancePaused
		}
		return err
	})
	return paused, err
}

// Close closes every connection.
func (s *AdminSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, c := range s.clients {
		errs = append(errs, c.Close())
		delete(s.clients, id)
	}
	return errors.Join(errs...)
}

// viaEntry calls fn with the entry member's client. When the entry member does not answer
// at all (not a refusal: a broken connection), it tries the other members it knows, once
// each, and keeps the first that answers as the new entry.
func (s *AdminSource) viaEntry(ctx context.Context, fn func(*admin.Client) error) error {
	s.mu.Lock()
	entry, known := s.entry, s.known
	s.mu.Unlock()
	err := fn(entry)
	var ce *admin.CallError
	if err == nil || errors.As(err, &ce) || ctx.Err() != nil {
		return err
	}
	for _, m := range known {
		if m.Node == entry.Node().String() || m.Status != "Up" || !m.Reachable {
			continue
		}
		c, derr := s.client(ctx, m)
		if derr != nil {
			continue
		}
		if ferr := fn(c); ferr == nil || errors.As(ferr, &ce) {
			s.mu.Lock()
			s.entry = c
			s.mu.Unlock()
			s.forget(entry)
			return ferr
		}
	}
	return err
}

// forgetBroken forgets c when err says its connection broke (not a refusal), so the next
// call dials the member again.
func (s *AdminSource) forgetBroken(c *admin.Client, err error) {
	var ce *admin.CallError
	if err != nil && !errors.As(err, &ce) {
		s.mu.Lock()
		entry := s.entry == c
		s.mu.Unlock()
		if !entry {
			s.forget(c)
		}
	}
}

// forget closes a client that stopped answering.
func (s *AdminSource) forget(c *admin.Client) {
	s.mu.Lock()
	id := c.Node().String()
	if s.clients[id] == c {
		delete(s.clients, id)
	}
	s.mu.Unlock()
	c.Close()
}

// client returns a connection to member m, dialling it at the addresses it announced.
func (s *AdminSource) client(ctx context.Context, m *adminpb.MemberInfo) (*admin.Client, error) {
	s.mu.Lock()
	c := s.clients[m.GetNode()]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	var errs []error
	for _, a := range m.GetAddrs() {
		addr := a
		if !strings.Contains(addr, "/p2p/") {
			addr += "/p2p/" + m.Node
		}
		cfg := s.cfg
		cfg.Node = addr
		c, err := admin.Dial(ctx, cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		if old := s.clients[m.Node]; old != nil { // another call dialled it meanwhile
			s.mu.Unlock()
			c.Close()
			return old, nil
		}
		s.clients[m.Node] = c
		s.mu.Unlock()
		return c, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("member %s announced no address", m.GetNode())
	}
	return nil, fmt.Errorf("cannot reach member %s: %w", m.GetNode(), errors.Join(errs...))
}

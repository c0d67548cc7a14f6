package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/shard"
)

// The operator's directives live in the replicated store under the "op" prefix
// (datadir.FamilyDirective), one key per directive and signer, so that concurrent changes of
// different directives never overwrite each other, and one signer's record never another's:
//
//	op␀SIGNER␀drain␀NODE          the member is drained
//	op␀SIGNER␀pause               automatic rebalancing is paused
//	op␀SIGNER␀pin␀TYPE␀SHARD      the shard is pinned to a member
//	op␀SIGNER␀stop␀TYPE           the entity type is out of service
//
// The value is the request that made the change, as the admin signed it (SIGNER is its
// peer id, "unsigned" for a program's change in a cluster without admins); undoing a
// directive stores a signed undo. Every member verifies each record against its own admin
// set where it applies them — its core, which the simulation runs too — and follows, per
// directive, the latest one that verifies (signeddirectives.go): a directive stored by a
// member that is not an admin's is ignored, and logged. Every member reads them all (a
// majority read) when it starts, when a coordinator starts here, when a member announces a
// change on the sharding-events topic, and every directiveRefresh in case an announcement
// was lost. Keys of an earlier release (op␀KIND…, unsigned) are followed only by a member
// without admins.
const (
	directiveDrain   = "drain"
	directivePause   = "pause"
	directivePin     = "pin"
	directiveStop    = "stop"
	directiveRefresh = 5 * time.Second
)

// DirectiveChange is one change of the operator's directives.
type DirectiveChange struct {
	// Kind is "drain", "pause", "pin" or "stop".
	Kind string
	// Node: the member drained (drain) or pinned to (pin).
	Node membership.NodeID
	// Type and Shard: the entity type (pin, stop) and shard (pin).
	Type  string
	Shard shard.ID
	// Undo removes the directive (undrain, resume, unpin, start).
	Undo bool
}

// parts returns the parts of the change's key after the family and signer: what the
// directive is about, the same for setting and undoing it.
func (c DirectiveChange) parts() ([]string, error) {
	if strings.Contains(string(c.Node)+c.Type+string(c.Shard), datadir.Sep) {
		return nil, fmt.Errorf("%s: a member, type or shard name with a 0 byte", c.Kind)
	}
	switch c.Kind {
	case directiveDrain:
		if c.Node == "" {
			return nil, errors.New("drain: no member named")
		}
		return []string{directiveDrain, string(c.Node)}, nil
	case directivePause:
		return []string{directivePause}, nil
	case directivePin:
		if c.Type == "" || c.Shard == "" || (!c.Undo && c.Node == "") {
			return nil, errors.New("pin: type, shard and member are required")
		}
		return []string{directivePin, c.Type, string(c.Shard)}, nil
	case directiveStop:
		if c.Type == "" {
			return nil, errors.New("stop: no entity type named")
		}
		return []string{directiveStop, c.Type}, nil
	}
	return nil, fmt.Errorf("unknown directive %q", c.Kind)
}

// apply adds the change (a directive set, not undone) to d.
func (c DirectiveChange) apply(d *engine.Directives) {
	switch c.Kind {
	case directiveDrain:
		d.Draining[c.Node] = true
	case directivePause:
		d.RebalancePaused = true
	case directivePin:
		if d.Pins[c.Type] == nil {
			d.Pins[c.Type] = map[shard.ID]membership.NodeID{}
		}
		d.Pins[c.Type][c.Shard] = c.Node
	case directiveStop:
		d.Stopped[c.Type] = true
	}
}

// String describes the change for logs and the watch stream.
func (c DirectiveChange) String() string {
	switch c.Kind {
	case directiveDrain:
		return map[bool]string{false: "drain ", true: "undrain "}[c.Undo] + string(c.Node)
	case directivePause:
		return map[bool]string{false: "rebalance paused", true: "rebalance resumed"}[c.Undo]
	case directivePin:
		if c.Undo {
			return fmt.Sprintf("unpin %s/%s", c.Type, c.Shard)
		}
		return fmt.Sprintf("pin %s/%s to %s", c.Type, c.Shard, c.Node)
	case directiveStop:
		return map[bool]string{false: "stop type ", true: "start type "}[c.Undo] + c.Type
	}
	return c.Kind
}

// ChangeDirective stores a change of the operator's directives made by this member's program
// (System.PinShard), signed with its AdminIdentity (unsigned without one: followed only by
// members without admins), as StoreDirective does.
func (n *Node) ChangeDirective(ctx context.Context, c DirectiveChange) error {
	if n.cfg.AdminIdentity == nil && n.cfg.Trust.HasAdmins() {
		return fmt.Errorf("%s: this member follows only directives signed by an admin (it has admin-allow or cluster-authority): "+
			"give the program an admin identity (shardmesh.WithAdminIdentity)", c)
	}
	signed, err := SignDirective(c, n.cfg.AdminIdentity, n.self.Node, time.Now(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return n.StoreDirective(ctx, signed)
}

// StoreDirective stores a change of the operator's directives, the request as signed
// (acknowledged by a write quorum), applies it here, announces it to the other members —
// who each verify it before they follow it — and returns once the directives in force here
// were read back. It refuses a change this member itself would not follow.
func (n *Node) StoreDirective(ctx context.Context, signed []byte) error {
	res := make(chan error, 1)
	if err := n.input(ctx, ChangeDirective{Signed: signed, Done: func(err error) { res <- err }}); err != nil {
		return err
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// ReadDirectives reads the directives from the store now and returns them: unlike
// Directives, never a copy older than a change stored before the call, nor none at all. It
// fails when the store does not answer (the metadata group has no leader, or this member
// reaches none of its voters).
func (n *Node) ReadDirectives(ctx context.Context) (engine.Directives, error) {
	type read struct {
		d   engine.Directives
		err error
	}
	res := make(chan read, 1)
	if err := n.input(ctx, ReadDirectives{Done: func(d engine.Directives, err error) { res <- read{d, err} }}); err != nil {
		return engine.Directives{}, err
	}
	select {
	case r := <-res:
		return r.d, r.err
	case <-ctx.Done():
		return engine.Directives{}, ctx.Err()
	case <-n.done:
		return engine.Directives{}, ErrStopped
	}
}

// Directives returns the directives in force on this member, as last read from the store;
// ok is false before they were read once.
func (n *Node) Directives(ctx context.Context) (d engine.Directives, ok bool, err error) {
	_, err = onLoop(ctx, n, func(_ time.Time, c *Core) (struct{}, error) {
		d, ok = c.eng.Directives()
		return struct{}{}, nil
	})
	return d, ok, err
}

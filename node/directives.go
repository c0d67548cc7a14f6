package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shardmesh/shardmesh/datadir"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/remember"
	"github.com/shardmesh/shardmesh/shard"
)

// The operator's directives live in the replicated store under the "op" prefix
// (datadir.FamilyDirective), one key per directive so that concurrent changes of different
// directives never overwrite each other:
//
//	op␀drain␀NODE          the member is drained
//	op␀pause               automatic rebalancing is paused
//	op␀pin␀TYPE␀SHARD      the shard is pinned to the member in the value
//	op␀stop␀TYPE           the entity type is out of service
//
// Undoing a directive writes a tombstone. Every member reads them all (a majority read) when
// it starts, when a coordinator starts here, when a member announces a change on the
// sharding-events topic, and every directiveRefresh in case an announcement was lost.
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

func (c DirectiveChange) key() (string, error) {
	switch c.Kind {
	case directiveDrain:
		if c.Node == "" {
			return "", errors.New("drain: no member named")
		}
		return datadir.Key(datadir.FamilyDirective, directiveDrain, string(c.Node)), nil
	case directivePause:
		return datadir.Key(datadir.FamilyDirective, directivePause), nil
	case directivePin:
		if c.Type == "" || c.Shard == "" || (!c.Undo && c.Node == "") {
			return "", errors.New("pin: type, shard and member are required")
		}
		return datadir.Key(datadir.FamilyDirective, directivePin, c.Type, string(c.Shard)), nil
	case directiveStop:
		if c.Type == "" {
			return "", errors.New("stop: no entity type named")
		}
		return datadir.Key(datadir.FamilyDirective, directiveStop, c.Type), nil
	}
	return "", fmt.Errorf("unknown directive %q", c.Kind)
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

// ChangeDirective stores a change of the operator's directives (acknowledged by a write
// quorum), applies it here, announces it to the other members, and returns once the
// directives in force here were read back.
func (n *Node) ChangeDirective(ctx context.Context, c DirectiveChange) error {
	res := make(chan error, 1)
	if err := n.input(ctx, ChangeDirective{Change: c, Done: func(err error) { res <- err }}); err != nil {
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

// Directives returns the directives in force on this member, as last read from the store;
// ok is false before they were read once.
func (n *Node) Directives(ctx context.Context) (d engine.Directives, ok bool, err error) {
	_, err = onLoop(ctx, n, func(_ time.Time, c *Core) (struct{}, error) {
		d, ok = c.eng.Directives()
		return struct{}{}, nil
	})
	return d, ok, err
}

// ParseDirectives reads the directives from their records in the store (a scan of
// datadir.FamilyDirective); records it does not know are logged and left out.
func ParseDirectives(recs []remember.Record, log *slog.Logger) engine.Directives {
	d := engine.Directives{Draining: map[membership.NodeID]bool{}, Pins: map[string]map[shard.ID]membership.NodeID{}, Stopped: map[string]bool{}}
	for _, r := range recs {
		parts := strings.Split(strings.TrimPrefix(r.Key, datadir.Prefix(datadir.FamilyDirective)), datadir.Sep)
		switch {
		case parts[0] == directiveDrain && len(parts) == 2:
			d.Draining[membership.NodeID(parts[1])] = true
		case parts[0] == directivePause && len(parts) == 1:
			d.RebalancePaused = true
		case parts[0] == directivePin && len(parts) >= 3:
			typ, s := parts[1], shard.ID(strings.Join(parts[2:], datadir.Sep))
			if d.Pins[typ] == nil {
				d.Pins[typ] = map[shard.ID]membership.NodeID{}
			}
			d.Pins[typ][s] = membership.NodeID(r.Value)
		case parts[0] == directiveStop && len(parts) == 2:
			d.Stopped[parts[1]] = true
		default:
			log.Warn("ignored an unknown directive in the store", "key", r.Key)
		}
	}
	return d
}

package shardmesh

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardmesh/shardmesh/allocation"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/node"
	"github.com/shardmesh/shardmesh/passivation"
	"github.com/shardmesh/shardmesh/shard"
)

// EntityTypeKey names an entity type and fixes its message type M and reply type R.
type EntityTypeKey[M, R any] struct{ name string }

// NewEntityTypeKey returns the key of entity type name.
func NewEntityTypeKey[M, R any](name string) EntityTypeKey[M, R] {
	return EntityTypeKey[M, R]{name: name}
}

// Name returns the entity type's name.
func (k EntityTypeKey[M, R]) Name() string { return k.name }

// Behavior handles an entity's messages, one at a time. The returned reply (or error) goes
// to the asker of an Ask; for a Tell it is dropped.
type Behavior[M, R any] interface {
	Receive(ctx *Context, msg M) (R, error)
}

// BehaviorFunc adapts a function to a Behavior.
type BehaviorFunc[M, R any] func(ctx *Context, msg M) (R, error)

// Receive calls f.
func (f BehaviorFunc[M, R]) Receive(ctx *Context, msg M) (R, error) { return f(ctx, msg) }

// Context is what an entity knows of itself, given to its factory and to every Receive.
type Context struct {
	c *node.EntityContext
	// accepts reports whether a value is of the type's message type (timers' messages
	// are handed to Receive as they are).
	accepts func(any) bool
}

// EntityID returns the entity's id.
func (c *Context) EntityID() string { return string(c.c.Entity) }

// ShardID returns the id of the entity's shard.
func (c *Context) ShardID() string { return string(c.c.Shard) }

// TypeName returns the entity type's name.
func (c *Context) TypeName() string { return c.c.Type() }

// Node returns the id of the member this incarnation runs on.
func (c *Context) Node() string { return string(c.c.Node()) }

// Epoch returns the shard's allocation epoch when this incarnation started: the fencing
// token of its durable state. A later incarnation elsewhere has a greater epoch.
func (c *Context) Epoch() uint64 { return uint64(c.c.Epoch) }

// Passivate asks sharding to stop this entity: it gets its stop message, and messages that
// arrive meanwhile are buffered and delivered to its next incarnation.
func (c *Context) Passivate() { c.c.Passivate() }

// Stop stops this incarnation after the current message (the answer to the stop message).
func (c *Context) Stop() { c.c.Stop() }

// LoadState reads the entity's durable state, replicated on a quorum of members; nil when
// none is stored yet. It also fences the state with this incarnation's shard allocation: a
// save from an incarnation of an earlier allocation (a member the shard has moved away
// from) is refused from now on. Load once, on the incarnation's first message, and keep the
// state in memory.
func (c *Context) LoadState(ctx context.Context) ([]byte, error) {
	b, err := c.c.LoadState(ctx)
	if errors.Is(err, node.ErrNoState) {
		return nil, nil
	}
	return b, err
}

// SaveState stores the entity's durable state on a quorum of members before it returns, so
// a change acknowledged after it survives handoffs, crashes and full-cluster restarts. It
// fails (errors.Is remember.ErrFenced) when the entity's shard has moved since this
// incarnation started.
func (c *Context) SaveState(ctx context.Context, state []byte) error {
	return c.c.SaveState(ctx, state)
}

// Entity describes an entity type.
type Entity[M, R any] struct {
	// Key names the type. Required.
	Key EntityTypeKey[M, R]
	// New creates an entity's behaviour when an incarnation handles its first message.
	// Required.
	New func(ctx *Context) Behavior[M, R]
	// MessageCodec and ReplyCodec carry messages and replies to other members. Required.
	MessageCodec Codec[M]
	ReplyCodec   Codec[R]
	// StopMessage, when set, is what an entity receives when it must stop (handoff,
	// passivation); it answers by calling Context.Stop. When nil, entities are stopped
	// without a message.
	StopMessage *M
	// Role overrides sharding.role for this type.
	Role string
	// Extractor maps entity ids to shards. Default: Akka's HashCodeMessageExtractor over
	// sharding.number-of-shards.
	Extractor shard.Extractor
	// MessageExtractor, when set, takes the entity id from the message itself, as Akka's
	// message extractor does (ShardingMessageExtractor.entityId): Region.TellMessage and
	// Region.AskMessage then need no id, and the shard comes from the id by Extractor.
	MessageExtractor func(msg M) string
	// Strategy overrides the configured allocation strategy (sharding.allocation-strategy)
	// for this type: a built-in one with settings of its own, or any allocation.Strategy
	// (docs/allocation.md, examples/custom-allocation). Pins still apply around it.
	Strategy allocation.Strategy
	// Passivation overrides sharding.passivation for this type: for instance
	// passivation.DefaultStrategy().WithActiveEntityLimit(10_000), or passivation.Disabled()
	// to keep every entity until it stops itself.
	Passivation *passivation.Settings
	// RememberEntities restarts this type's entities after a rebalance, a crash or a
	// full-cluster restart (as sharding.remember-entities does for every type). Automatic
	// passivation is then off.
	RememberEntities bool
}

// Region is a registered entity type on this member: the way to its entities.
type Region[M, R any] struct {
	s       *System
	key     EntityTypeKey[M, R]
	spec    *node.EntityType
	idOfMsg func(M) string
}

// ShardingEnvelope addresses a message to an entity, as Akka's ShardingEnvelope.
type ShardingEnvelope[M any] struct {
	EntityID string
	Message  M
}

// Init registers an entity type on this member: its region starts and registers with the
// type's coordinator. Members without the type's role run a proxy that routes but hosts
// nothing.
func Init[M, R any](s *System, e Entity[M, R]) (*Region[M, R], error) {
	if e.Key.name == "" {
		return nil, errors.New("entity type key without a name")
	}
	if e.New == nil || e.MessageCodec == nil || e.ReplyCodec == nil {
		return nil, fmt.Errorf("entity type %q: New, MessageCodec and ReplyCodec are required", e.Key.name)
	}
	settings, err := engine.TypeFromConfig(s.cfg, e.Key.name, e.Role, e.Strategy, e.RememberEntities)
	if err != nil {
		return nil, err
	}
	if e.Passivation != nil {
		if err := e.Passivation.Validate(); err != nil {
			return nil, fmt.Errorf("entity type %q: %w", e.Key.name, err)
		}
		settings.Passivation = *e.Passivation
	}
	extractor := e.Extractor
	if extractor == nil {
		if extractor, err = shard.NewHashCodeExtractor(s.cfg.Sharding.NumberOfShards); err != nil {
			return nil, err
		}
	}
	accepts := func(v any) bool { _, ok := v.(M); return ok } // one for the type, not per incarnation
	spec := node.EntityType{
		Name:      e.Key.name,
		Settings:  settings,
		Extractor: extractor,
		New: func(c *node.EntityContext) node.Behavior {
			u := &untyped[M, R]{ctx: Context{c: c, accepts: accepts}} // one allocation for both
			u.b = e.New(&u.ctx)
			return u
		},
		EncodeMessage: func(v any) ([]byte, error) { return e.MessageCodec.Marshal(v.(M)) },
		DecodeMessage: func(b []byte) (any, error) { return e.MessageCodec.Unmarshal(b) },
		EncodeReply:   func(v any) ([]byte, error) { return e.ReplyCodec.Marshal(v.(R)) },
		DecodeReply:   func(b []byte) (any, error) { return e.ReplyCodec.Unmarshal(b) },
	}
	if e.StopMessage != nil {
		stop := *e.StopMessage
		spec.StopMessage = func() any { return stop }
	}
	if err := s.node.RegisterType(spec); err != nil {
		return nil, err
	}
	s.roles.Store(e.Key.name, settings.Region.Role)
	return &Region[M, R]{s: s, key: e.Key, spec: &spec, idOfMsg: e.MessageExtractor}, nil
}

// untyped adapts a typed Behavior to the runtime's; its Context serves the incarnation.
type untyped[M, R any] struct {
	ctx Context
	b   Behavior[M, R]
}

func (u *untyped[M, R]) Receive(_ *node.EntityContext, msg any) (any, error) {
	return u.b.Receive(&u.ctx, msg.(M))
}

// EntityRefFor returns a reference to entity id.
func (r *Region[M, R]) EntityRefFor(id string) EntityRef[M, R] {
	return EntityRef[M, R]{s: r.s, typ: r.key.name, id: id}
}

// Tell sends an enveloped message, as to Akka's shard region.
func (r *Region[M, R]) Tell(env ShardingEnvelope[M]) error {
	return r.s.node.Tell(r.key.name, env.EntityID, env.Message)
}

// Ask sends an enveloped message and waits for the entity's reply, its error, or ctx.
func (r *Region[M, R]) Ask(ctx context.Context, env ShardingEnvelope[M]) (R, error) {
	return r.EntityRefFor(env.EntityID).Ask(ctx, env.Message)
}

// TellMessage sends msg to the entity whose id the type's MessageExtractor takes from it.
func (r *Region[M, R]) TellMessage(msg M) error {
	id, err := r.idOf(msg)
	if err != nil {
		return err
	}
	return r.s.node.Tell(r.key.name, id, msg)
}

// AskMessage asks the entity whose id the type's MessageExtractor takes from msg.
func (r *Region[M, R]) AskMessage(ctx context.Context, msg M) (R, error) {
	id, err := r.idOf(msg)
	if err != nil {
		var zero R
		return zero, err
	}
	return r.EntityRefFor(id).Ask(ctx, msg)
}

func (r *Region[M, R]) idOf(msg M) (string, error) {
	if r.idOfMsg == nil {
		return "", fmt.Errorf("entity type %q has no MessageExtractor: send with EntityRefFor(id) or a ShardingEnvelope", r.key.name)
	}
	id := r.idOfMsg(msg)
	if id == "" {
		return "", fmt.Errorf("entity type %q: the MessageExtractor gave no entity id for the message", r.key.name)
	}
	return id, nil
}

// StartEntity starts entity id without a message, as Akka's StartEntity: its shard is
// allocated if it has no home, its behaviour is created there, and StartEntity returns once
// it runs (an entity already running is left as it is).
func (r *Region[M, R]) StartEntity(ctx context.Context, id string) error {
	return r.s.node.StartEntity(ctx, r.key.name, id)
}

// EntityRefFor returns a reference to entity id of the type key names, registered on s.
func EntityRefFor[M, R any](s *System, key EntityTypeKey[M, R], id string) EntityRef[M, R] {
	return EntityRef[M, R]{s: s, typ: key.name, id: id}
}

// EntityRef addresses one entity wherever it lives.
type EntityRef[M, R any] struct {
	s   *System
	typ string
	id  string
}

// EntityID returns the entity's id.
func (r EntityRef[M, R]) EntityID() string { return r.id }

// Tell sends msg to the entity without waiting. Messages from one sender to one entity
// arrive in order. An error means the message was not accepted (unknown type, member
// stopped); delivery itself is at most once.
func (r EntityRef[M, R]) Tell(msg M) error { return r.s.node.Tell(r.typ, r.id, msg) }

// Ask sends msg to the entity and waits for its reply, its error, or ctx.
func (r EntityRef[M, R]) Ask(ctx context.Context, msg M) (R, error) {
	var zero R
	v, err := r.s.node.Ask(ctx, r.typ, r.id, msg)
	if err != nil {
		return zero, err
	}
	if v == nil {
		return zero, nil
	}
	reply, ok := v.(R)
	if !ok {
		return zero, fmt.Errorf("ask %s %s: the reply is a %T, not a %T", r.typ, r.id, v, zero)
	}
	return reply, nil
}

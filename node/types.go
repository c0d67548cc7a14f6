package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/shardmesh/shardmesh/coordinator"
	"github.com/shardmesh/shardmesh/engine"
	"github.com/shardmesh/shardmesh/membership"
	"github.com/shardmesh/shardmesh/region"
	"github.com/shardmesh/shardmesh/shard"
)

// EntityType is an entity type as the runtime runs it. The typed public API (package
// shardmesh) builds one from an Entity[M, R]; messages and replies are opaque values here,
// encoded only when they cross to another member.
type EntityType struct {
	// Name is the entity type key's name.
	Name string
	// Settings configure the type's coordinator, region and shards.
	Settings engine.TypeConfig
	// Extractor maps entity ids to shards.
	Extractor shard.Extractor
	// New creates an entity's behaviour when its incarnation handles its first message.
	New func(ctx *EntityContext) Behavior
	// EncodeMessage and DecodeMessage carry messages to other members.
	EncodeMessage func(any) ([]byte, error)
	DecodeMessage func([]byte) (any, error)
	// EncodeReply and DecodeReply carry replies to asks.
	EncodeReply func(any) ([]byte, error)
	DecodeReply func([]byte) (any, error)
	// StopMessage, when set, returns the message an entity gets when it must stop (handoff,
	// passivation); the entity answers it by calling EntityContext.Stop. When nil the entity
	// is stopped without a message.
	StopMessage func() any
}

// Behavior is an entity incarnation's message handler. It runs one message at a time.
type Behavior interface {
	// Receive handles one message. For an ask, reply (or err) goes back to the asker; for a
	// tell both are dropped.
	Receive(ctx *EntityContext, msg any) (reply any, err error)
}

// EntityContext is what an entity knows of itself. What all the entities of a type on a
// member share (Type, Node) is kept once, not in each incarnation's context.
type EntityContext struct {
	Shard  shard.ID
	Entity shard.EntityID
	// Epoch is the shard's allocation epoch when the incarnation started: the fencing token
	// of its durable state (LoadState, SaveState).
	Epoch coordinator.Epoch

	home *EntityHome
	e    Turns
	ext  *contextExt // what few incarnations use (nil for most: an incarnation's size stays)
}

// contextExt is what few incarnations use: the timers armed, and on a turn the message's
// reminder firing, timer key and span. Kept apart so that an incarnation stays in its
// allocation size class (TestIncarnationSize).
type contextExt struct {
	firing   *Firing      // the reminder whose firing is being handled
	stale    *atomic.Bool // that firing's flag (Message.Stale): its saves are refused once set
	span     trace.Span   // the handling's span (tracing), parent of its store rounds
	timerKey string       // the key of the timer whose message is being handled
	timers   map[string]uint64
	timerGen uint64
}

// firingStale reports whether the message being handled is a reminder's firing whose home
// handed the shard off since (Message.Stale).
func (c *EntityContext) firingStale() bool {
	return c.ext != nil && c.ext.stale != nil && c.ext.stale.Load()
}

// turnSpan returns the span of the message being handled (nil: not traced).
func (c *EntityContext) turnSpan() trace.Span {
	if c.ext == nil {
		return nil
	}
	return c.ext.span
}

// x returns c's extension, made on first use.
func (c *EntityContext) x() *contextExt {
	if c.ext == nil {
		c.ext = &contextExt{}
	}
	return c.ext
}

// EntityHome is what the entities of one type on one member share: the type's name and
// the member.
type EntityHome struct {
	Type string
	Node membership.NodeID
	spec *EntityType // the type, to encode reminders' messages (nil: a runtime without reminders)
	kind *entityKind // the member's entity runtime's share (nil in another runtime)
}

// NewEntityContext returns the context of an incarnation of entity id of shard s, of the
// type and on the member home names, started under epoch.
func NewEntityContext(home *EntityHome, s shard.ID, id shard.EntityID, epoch coordinator.Epoch) EntityContext {
	return EntityContext{Shard: s, Entity: id, Epoch: epoch, home: home}
}

// Type returns the entity type's name.
func (c *EntityContext) Type() string { return c.home.Type }

// Node returns the member the incarnation runs on.
func (c *EntityContext) Node() membership.NodeID { return c.home.Node }

// Passivate asks sharding to stop this entity: it gets its stop message, and messages that
// arrive meanwhile wait for its next incarnation.
func (c *EntityContext) Passivate() { c.e.Passivate() }

// Stop stops this incarnation once the current message is handled (the answer to the stop
// message). Messages still queued go to the next incarnation.
func (c *EntityContext) Stop() { c.e.Stop() }

// Turns is what an entity runtime offers an incarnation's context: Node's entity workers,
// or the simulation's.
type Turns interface {
	// Passivate and Stop: see EntityContext.
	Passivate()
	Stop()
	// LoadState and SaveState carry out EntityContext's.
	LoadState(ctx context.Context, c *EntityContext) ([]byte, error)
	SaveState(ctx context.Context, c *EntityContext, state []byte) error
	// Remind carries out a reminder operation through the member's core (ReminderOp) and
	// waits for its outcome or ctx.
	Remind(ctx context.Context, op ReminderOp) ([]Reminder, error)
	// Timer hands a timer operation to the member's core (TimerOp), for this incarnation.
	Timer(op TimerOp)
}

// WithTurns returns ctx bound to the entity runtime's incarnation t.
func (c EntityContext) WithTurns(t Turns) EntityContext {
	c.e = t
	return c
}

// Errors of sending to entities.
var (
	// ErrUnknownType: no entity type of that name is registered on this member.
	ErrUnknownType = errors.New("unknown entity type")
	// ErrStopped: the member has stopped.
	ErrStopped = errors.New("member stopped")
	// ErrTypeStopped: an operator took the entity type out of service (`shardctl types stop`).
	ErrTypeStopped = region.ErrTypeStopped
	// ErrEntityFailed: the entity panicked while handling the message.
	ErrEntityFailed = errors.New("entity failed")
	// ErrMemberDown: the member an ask went to was downed or removed before it replied; the
	// entity may or may not have handled the message.
	ErrMemberDown = errors.New("the member it went to was downed or removed before it replied (the message may or may not have been handled)")
)

// RemoteError is an error an entity on another member returned for an ask.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return e.Message }

// nonNil returns b, or an empty slice for nil: a message's encoded form is nil only when it
// was never encoded, so a value that encodes to zero bytes must not look like that.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Message is the payload of a region.Envelope in this runtime: a message for an entity, or
// a signal to its incarnation (start, stop).
type Message struct {
	value   any    // the Go value (nil when it came encoded from another member)
	encoded []byte // the encoded value (set once it crossed, or was encoded to cross)
	ask     Asker
	askID   uint64            // an ask from another member
	replyTo membership.NodeID // that member
	stop    bool              // the stop signal (never routed, only in mailboxes)
	start   bool              // creates the behaviour of a remembered entity started without a message
	startEn bool              // StartEntity: start the entity, deliver nothing (answered with nil)
	credits *credits          // the type's credits, one held while the message is in flight
	from    membership.NodeID // the member that forwarded it here ("": sent on this member)
	ext     *msgExt           // what few messages have (nil for most: the hot path's size stays)
}

// msgExt is what few messages have, kept apart so that Message stays in its allocation
// size class.
type msgExt struct {
	at     time.Time // start: when the shard started the entity (for the recovery budget)
	tr     *msgTrace // tracing: the message's span context
	firing *Firing   // a reminder's message: which fired, when
	// home: the epoch of this member's home of the shard that a message must not leave (a
	// reminder's firing); kept here because an ended incarnation hands its unhandled
	// messages back without their envelopes.
	home coordinator.Epoch
	// stale: a reminder's firing whose home stopped being the shard's (staleFirings); it
	// is refused, not handled.
	stale *atomic.Bool
	timer *timerMark // an in-memory timer's message
	// bounce: a message this member forwarded, sent back by a member that is no longer its
	// shard's home; it is routed again (rare, so here and not in Deliver, whose boxing into
	// an Input is on the hot path).
	bounce *region.NotHomeError
}

// x returns m's extension, made on first use.
func (m *Message) x() *msgExt {
	if m.ext == nil {
		m.ext = &msgExt{}
	}
	return m.ext
}

// trace returns m's trace (nil: not traced).
func (m *Message) trace() *msgTrace {
	if m.ext == nil {
		return nil
	}
	return m.ext.tr
}

// NewMessage returns a message with value msg, asked by ask (nil for a tell).
func NewMessage(msg any, ask Asker) *Message { return &Message{value: msg, ask: ask} }

// NewEncodedMessage returns a message already in its type's message codec.
func NewEncodedMessage(payload []byte, ask Asker) *Message {
	return &Message{encoded: nonNil(payload), ask: ask}
}

// Value returns the message's value, decoded with the type's codec when it came encoded.
func (m *Message) Value(t *EntityType) (any, error) {
	if m.value != nil || m.encoded == nil {
		return m.value, nil
	}
	return t.DecodeMessage(m.encoded)
}

// homeEpoch is the epoch of the home m must not leave (0: it may go wherever its entity
// is). A message routed with it is refused, not forwarded, once that home is no longer
// this member's (region.NotHomeError).
func (m *Message) homeEpoch() coordinator.Epoch {
	if m.ext == nil {
		return 0
	}
	return m.ext.home
}

// Stale reports whether m is a reminder's firing whose home no longer hosts the shard with
// the epoch it fired with: an entity runtime refuses it with ErrNotHome instead of handling
// it (the member's own does: entity.handle).
func (m *Message) Stale() bool {
	return m.ext != nil && m.ext.stale != nil && m.ext.stale.Load()
}

// Firing returns the reminder whose firing m is (nil for any other message): for entity
// runtimes other than the member's own (the simulation's).
func (m *Message) Firing() *Firing {
	if m.ext == nil {
		return nil
	}
	return m.ext.firing
}

// IsAsk reports whether someone waits for a reply.
func (m *Message) IsAsk() bool { return m.ask != nil || m.askID != 0 }

// IsStop reports the stop signal: the incarnation must stop (its type's StopMessage, or
// at once).
func (m *Message) IsStop() bool { return m.stop }

// IsStart reports the start of a remembered entity without a message.
func (m *Message) IsStart() bool { return m.start }

// signal reports a mailbox-only message (stop, start), never routed and holding no credit.
func (m *Message) signal() bool { return m.stop || m.start }

// Asker waits for the reply to an ask made on this member.
type Asker interface {
	// ID is the ask's id on the wire (never 0).
	ID() uint64
	// Resolve gives the ask its reply; only the first call counts. It must not block.
	Resolve(Reply)
}

// Reply answers an ask: the entity's reply value (from an entity on this member), its
// encoding in the type's reply codec (from another member), or an error.
type Reply struct {
	Value   any
	Encoded []byte
	Err     error
}

func unknownType(name string) error { return fmt.Errorf("%w %q", ErrUnknownType, name) }
